"""Regenerate the small fixture stores shipped in tests/fixtures/stores/.

    .reference/venv/bin/python tests/reference/make_fixtures.py

Each store is a hand-shaped store of make_cases.py (seeded, so the same every
time), written by the reference's own row mapping; beside it, two query vectors:
`<name>.question.json` (a seeded random unit vector) and `<name>.near.json` (a
stored belief's vector, so the top hit has similarity near 1). The README's first
command and the insta snapshots use them. Rewriting them changes those snapshots.
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from make_cases import build_hand_store  # noqa: E402

FIXTURES = {"coins-a": 1, "coins-b": 5}


def main() -> None:
    out = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
    out.mkdir(parents=True, exist_ok=True)
    for name, seed in FIXTURES.items():
        facts = build_hand_store(out / f"{name}.db", seed)
        rng = np.random.default_rng(seed + 1000)
        question = rng.standard_normal(384).astype(np.float32)
        question = (question / np.linalg.norm(question)).astype(np.float32)
        (out / f"{name}.question.json").write_text(json.dumps(question.tolist()) + "\n")
        (out / f"{name}.near.json").write_text(json.dumps(facts["vectors"][3]) + "\n")
        print(out / f"{name}.db")


if __name__ == "__main__":
    main()
