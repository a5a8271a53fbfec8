"""Memory-projection oracle: the reference's `render_memory_region` on a store.

Reads a JSON list of requests on stdin and prints a JSON list of results:

    {"store": PATH, "config": PATH, "manifest": {...}, "now": ISO-8601 instant,
     "base_dir": PATH | null, "observer_project": str | null,
     "exclude_source_tags": [str], "fold_targets": [str]}

Each result is the region as `POST /memory/projection/{store}` sends it
({"body", "content_hash", "fold_verdicts"}, plus "fold_order", the verdicts'
keys in order) or {"error": "<exception type>: <message>"}. Every clock the
render reads is frozen at `now`; the store is opened as the `default` handle.
"""

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Freezes decay's, the query's, the use events' and the refusal hold's clocks.
from digest_oracle import _dispose, _FrozenClock, serve_requests  # noqa: E402


async def _run(request: dict) -> dict:
    from particles.config import reset_config
    from particles.db import reset_engine, session_scope
    from particles.operations.projection.manifest import DocManifest
    from particles.operations.projection.memory_region import render_memory_region

    now = datetime.fromisoformat(request["now"])
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    _FrozenClock.frozen = now
    os.environ["DATABASE_URL"] = f"sqlite+aiosqlite:///{request['store']}"
    os.environ["PARTICLES_CONFIG"] = request["config"]
    reset_config()
    try:
        manifest = DocManifest.model_validate(request["manifest"])
        base_dir = request.get("base_dir")
        async with session_scope("default") as session:
            region = await render_memory_region(
                session,
                manifest,
                base_dir=None if base_dir is None else Path(base_dir),
                observer_project=request.get("observer_project"),
                exclude_source_tags=request.get("exclude_source_tags") or [],
                fold_targets=request.get("fold_targets") or [],
            )
    except Exception as exc:  # compared too: particles-rs must fail where this raises
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        await _dispose()
        reset_engine()
    return {
        "body": region.body,
        "content_hash": region.content_hash,
        "fold_verdicts": dict(region.fold_verdicts),
        "fold_order": list(region.fold_verdicts),
    }


def main() -> None:
    serve_requests(_run)


if __name__ == "__main__":
    main()
