"""Runs the reference's grounding functions over a batch of replies.

stdin: {"ids": [particle id, ...], "replies": [text, ...]}
stdout: {"handles": [[id, handle], ...], "results": [{"answer": ..., "sentences": [...]}, ...]}
"""

import json
import sys
from types import SimpleNamespace

from particles.operations.query.grounding import parse_grounded, particle_handles

batch = json.load(sys.stdin)
handles = particle_handles(SimpleNamespace(id=pid) for pid in batch["ids"])
results = []
for reply in batch["replies"]:
    parsed = parse_grounded(reply, handles)
    results.append(
        {
            "answer": parsed.answer,
            "sentences": [s.model_dump(mode="json") for s in parsed.attribution.sentences],
        }
    )
json.dump({"handles": list(handles.items()), "results": results}, sys.stdout)
