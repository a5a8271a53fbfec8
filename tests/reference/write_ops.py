"""Write to a store through the reference's own API, as another process would.

    write_ops.py STORE < OPS.json
    write_ops.py STORE --lines < TRANSACTIONS.jsonl

OPS is a JSON list, applied in one session and committed at the end:
  {"op": "insert", "id": ID, "content": TEXT, "confidence": X, "vector": [...],
   "subject_ids": [...]}                     -> store.particle_store.insert_particle
  {"op": "retract", "id": ID}                 -> update_particle_status(RETRACTED)
  {"op": "property", "id": ID, "key": K, "value": V} -> set_particle_property

With --lines the process stays up: each input line is one transaction,
{"ops": OPS, "rollback": BOOL}, applied in its own session and committed (or
rolled back when "rollback" is true); each is acknowledged with one output line,
{"ok": true, "seconds": S} (the session's time, from its first statement to
its commit) or {"ok": false, "error": TEXT}, once it is durable (or undone).
"""

import asyncio
import json
import sys
import time
from datetime import datetime, timezone


async def apply(session, op) -> None:
    from particles.core.schema import Confidence, ExtractorRef, Particle, Status, StatusReason
    from particles.store.particle_store import insert_particle, set_particle_property, update_particle_status

    if op["op"] == "insert":
        particle = Particle(
            id=op["id"],
            content=op["content"],
            confidence=Confidence(value=op["confidence"]),
            uncertainty_nature="EPISTEMIC",
            asserted_by="reference-writer",
            asserted_at=datetime(2025, 1, 1, tzinfo=timezone.utc),
            extractor_ref=ExtractorRef(name="general-extractor", version="1"),
            subject_ids=op.get("subject_ids", []),
        )
        await insert_particle(session, particle, op["vector"])
    elif op["op"] == "retract":
        await update_particle_status(session, op["id"], Status.RETRACTED, StatusReason.EXPLICIT_RETRACTION)
    elif op["op"] == "property":
        await set_particle_property(session, op["id"], op["key"], op["value"])
    else:
        raise ValueError(f"unknown op {op['op']!r}")


async def main() -> None:
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    from particles.db import _sqlite_set_pragmas

    store = sys.argv[1]
    lines = "--lines" in sys.argv[2:]
    engine = create_async_engine(f"sqlite+aiosqlite:///{store}")
    event.listen(engine.sync_engine, "connect", _sqlite_set_pragmas)
    if not lines:
        async with AsyncSession(engine) as session:
            for op in json.load(sys.stdin):
                await apply(session, op)
            await session.commit()
    else:
        for line in sys.stdin:
            if not line.strip():
                continue
            transaction = json.loads(line)
            try:
                started = time.perf_counter()
                async with AsyncSession(engine) as session:
                    for op in transaction["ops"]:
                        await apply(session, op)
                    if transaction.get("rollback"):
                        await session.rollback()
                    else:
                        await session.commit()
                reply = {"ok": True, "seconds": time.perf_counter() - started}
            except Exception as error:  # the harness decides what a failure means
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    await engine.dispose()


asyncio.run(main())
