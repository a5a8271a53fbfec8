"""Write to a store through the reference's own API, as another process would.

    write_ops.py STORE < OPS.json

OPS is a JSON list, applied in one session and committed at the end:
  {"op": "insert", "id": ID, "content": TEXT, "confidence": X, "vector": [...],
   "subject_ids": [...]}                     -> store.particle_store.insert_particle
  {"op": "retract", "id": ID}                 -> update_particle_status(RETRACTED)
  {"op": "property", "id": ID, "key": K, "value": V} -> set_particle_property
"""

import asyncio
import json
import sys
from datetime import datetime, timezone


async def main() -> None:
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    from particles.core.schema import Confidence, ExtractorRef, Particle, Status, StatusReason
    from particles.db import _sqlite_set_pragmas
    from particles.store.particle_store import insert_particle, set_particle_property, update_particle_status

    store, ops = sys.argv[1], json.load(sys.stdin)
    engine = create_async_engine(f"sqlite+aiosqlite:///{store}")
    event.listen(engine.sync_engine, "connect", _sqlite_set_pragmas)
    async with AsyncSession(engine) as session:
        for op in ops:
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
        await session.commit()
    await engine.dispose()


asyncio.run(main())
