"""Self-check of the harness's store copy: run with the reference's venv python.

Writes rows through an AsyncSession without committing (in memory, and in a WAL file
store), copies the store the way the plugin does, and checks the copy holds them.
Prints one JSON line; exit 1 when a copy misses a row.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from particles_rs_plugin import _snapshot_session  # noqa: E402


async def _one(url: str, out: str) -> dict:
    import sqlite3

    from sqlalchemy import event, text
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    from particles.db import _sqlite_set_pragmas

    engine = create_async_engine(url)
    event.listen(engine.sync_engine, "connect", _sqlite_set_pragmas)
    try:
        async with AsyncSession(engine) as session:
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
            await session.commit()
            await session.execute(text("INSERT INTO t VALUES (1)"))
            await session.commit()
            await session.execute(text("INSERT INTO t VALUES (2)"))  # not committed
            how_open = await _snapshot_session(session, out, flush=True)
            open_rows = sqlite3.connect(out).execute("SELECT count(*) FROM t").fetchone()[0]
            await session.commit()
            how_closed = await _snapshot_session(session, out, flush=True)
            closed_rows = sqlite3.connect(out).execute("SELECT count(*) FROM t").fetchone()[0]
    finally:
        await engine.dispose()
    return {"url": url, "uncommitted": {"how": how_open, "rows": open_rows, "want": 2},
            "committed": {"how": how_closed, "rows": closed_rows, "want": 2}}


async def main() -> int:
    d = tempfile.mkdtemp(prefix="suite-selfcheck-")
    results = [
        await _one("sqlite+aiosqlite:///:memory:", os.path.join(d, "mem.db")),
        await _one(f"sqlite+aiosqlite:///{d}/file.db", os.path.join(d, "file-copy.db")),
    ]
    ok = all(r[k]["rows"] == r[k]["want"] for r in results for k in ("uncommitted", "committed"))
    print(json.dumps({"ok": ok, "results": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
