"""Test seams for every `particles` process the server tests start.

PARTICLES_TEST_QVECS: a JSON file {question: [384 floats]}; the reference's
question encoder is replaced through its own seam (`set_embedding_model`), so
the reference ranks the vector our engine ranks for the same text.
PARTICLES_TEST_NOW: an ISO instant; the clock the reference reads for decay and
the recency window is frozen there (our engine is frozen at the same instant).
"""

import json
import os

if os.environ.get("PARTICLES_TEST_QVECS"):
    import numpy as np

    from particles import embeddings

    with open(os.environ["PARTICLES_TEST_QVECS"]) as handle:
        _TABLE = {q: np.asarray(v, dtype=np.float32) for q, v in json.load(handle).items()}

    class _StubEncoder:
        def encode(self, texts, convert_to_numpy=True, normalize_embeddings=True, **kw):
            return np.stack([_TABLE[t] for t in texts])

    embeddings.set_embedding_model(_StubEncoder())

if os.environ.get("PARTICLES_TEST_NOW"):
    from datetime import datetime

    _FROZEN = datetime.fromisoformat(os.environ["PARTICLES_TEST_NOW"])

    class _FrozenClock(datetime):
        @classmethod
        def now(cls, tz=None):
            return _FROZEN if tz is None else _FROZEN.astimezone(tz)

    import particles.core.scoring.decay as _decay
    import particles.operations.query.main as _query_main

    _decay.datetime = _FrozenClock
    _query_main.datetime = _FrozenClock
