"""Ranking oracle: run the reference's `retrieve_ranked` on a store.

Reads a JSON list of requests on stdin and prints a JSON list of results, one per
request. Each request:

    {"store": PATH, "vector": [floats] | null, "question": str | null,
     "top_k": int, "subject_id": str | null, "min_confidence": float,
     "now": ISO-8601 instant (the frozen clock), "use_embeddings": bool,
     "uncertainty_nature": str | null, "assertion_modality": str | null,
     "recency_window_days": int | null, "include_document_meta": bool,
     "include_non_asserted": bool,
     and the recall callers' retrieve_ranked keywords when given: "apply_utility",
     "apply_owner", "exclude_source_tags", "code_symbol_rank_weight"}

Each result is {"hits": [{"id", "sim", "eff"}]} or {"error": "<exception type>: <message>"}.
The clock the reference reads for decay is frozen at `now`, the query encoder is
replaced by the given vector, and config is the compiled defaults.
"""

import asyncio
import json
import sys
from datetime import datetime, timezone

import numpy as np

import particles.core.scoring.decay as decay_module
import particles.core.scoring.utility as utility_module
import particles.operations.query.main as query_main


class _FrozenClock(datetime):
    frozen: datetime = datetime.now(timezone.utc)

    @classmethod
    def now(cls, tz=None):  # noqa: D102 - mirrors datetime.now
        value = cls.frozen
        return value if tz is None else value.astimezone(tz)


# The reference reads the wall clock in two places on this path: decay (per
# candidate) and the recency window. Both see the frozen instant.
decay_module.datetime = _FrozenClock
query_main.datetime = _FrozenClock
# The recall options' usefulness lift ages use events at the wall clock too.
utility_module.datetime = _FrozenClock


def _window(during, on):
    """The TimeWindow the reference's CLI builds from --during / --on."""
    from particles.core.schema import TimeWindow
    from particles.core.validity import window_end_of_day, window_for_day

    if on is not None:
        return window_for_day(datetime.fromisoformat(on))
    if during is None:
        return None
    raw_start, raw_end = during.split("..", 1)
    start = datetime.fromisoformat(raw_start) if raw_start else None
    end = window_end_of_day(datetime.fromisoformat(raw_end)) if raw_end else None
    return TimeWindow(start=start, end=end)


async def _run(request: dict) -> dict:
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    from particles.core.schema import QueryRequest
    from particles.db import _sqlite_set_pragmas

    now = datetime.fromisoformat(request["now"])
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    _FrozenClock.frozen = now
    vector = request.get("vector")
    query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
    query_main._embed = lambda _text: query_vector
    fields = {
        key: request[key]
        for key in (
            "top_k",
            "subject_id",
            "min_confidence",
            "uncertainty_nature",
            "assertion_modality",
            "recency_window_days",
            "include_document_meta",
            "include_non_asserted",
            "tags",
            "include_ancestors",
            "predicate",
            "object_eq",
            "object_gt",
            "object_lt",
            "object_contains",
            "as_of",
        )
        if request.get(key) is not None
    }
    window = _window(request.get("during"), request.get("on"))
    if window is not None:
        fields["window"] = window
    query_request = QueryRequest(question=request.get("question") or "question", **fields)
    engine = create_async_engine(f"sqlite+aiosqlite:///{request['store']}")
    event.listen(engine.sync_engine, "connect", _sqlite_set_pragmas)
    try:
        async with AsyncSession(engine) as session:
            recall = {
                key: request[key]
                for key in ("apply_utility", "apply_owner", "exclude_source_tags", "code_symbol_rank_weight")
                if request.get(key) is not None
            }
            ranked = await query_main.retrieve_ranked(
                session, query_request, use_embeddings=request.get("use_embeddings", True), **recall
            )
            surfaces = await _surfaces(session, query_request, query_vector, {p.id for p, _, _ in ranked})
    finally:
        await engine.dispose()
    hits = [{"id": p.id, "sim": float(sim), "eff": float(eff)} for p, sim, eff in ranked]
    return {"hits": hits, **surfaces}


def _instant(value):
    return None if value is None else value.isoformat()


async def _surfaces(session, query_request, query_vector, hit_ids):
    """What retrieve_ranked computes but does not return, through the same pipeline
    function the reference's query uses: as-of notes and the undatable count, the
    claim-filter counts, the window readings and coverage."""
    from particles.operations.query.decay_policy import load_decay_policy
    from particles.operations.query.source_trust import load_trust_policy
    from particles.operations.query.window import WindowGather

    gather = WindowGather()
    _, _, notes, excluded, claim_stats = await query_main._gather_scored(
        session, query_request, query_vector, await load_trust_policy(session),
        await load_decay_policy(session), window_out=gather,
    )
    out = {
        "as_of_excluded_undatable": excluded,
        "as_of_notes": {
            pid: {"status": note.status.value, "retired_at": _instant(note.retired_at), "basis": note.basis,
                  "successor": note.successor.id if note.successor else None}
            for pid, note in notes.items() if pid in hit_ids
        },
        "claim_stats": list(claim_stats) if claim_stats is not None else None,
    }
    if query_request.window is not None:
        coverage = await gather.coverage(session)
        out["window_coverage"] = coverage.model_dump(mode="json")
        out["window_hits"] = {
            pid: {"reading": hit.reading.value, "closed_at": _instant(hit.closed_at),
                  "close_basis": hit.close_basis, "restates": hit.restates}
            for pid, hit in gather.hits.items() if pid in hit_ids
        }
    return out


async def run_one(request: dict) -> dict:
    """One request's result, or the error the reference raised."""
    try:
        return await _run(request)
    except Exception as exc:  # reported to the Rust side, which compares errors too
        return {"error": f"{type(exc).__name__}: {exc}"}


async def _main() -> None:
    requests = json.load(sys.stdin)
    json.dump([await run_one(request) for request in requests], sys.stdout)


if __name__ == "__main__":
    asyncio.run(_main())
