"""Digest oracle: the reference's `build_digest_located` on a store.

Reads a JSON list of requests on stdin and prints a JSON list of results:

    {"store": PATH, "project": str | null, "now": ISO-8601 instant,
     "config": PATH | null}

Each result is the reference's RenderedDigest as `GET /digest/{store}` sends it
({"markdown", "lines"}) or {"error": "<exception type>: <message>"}. Every clock
the digest reads (decay, use events, the refusal hold's cutoff) is frozen at
`now`; the store is opened as the reference's `default` handle.
"""

import asyncio
import json
import os
import sys
from datetime import datetime, timezone

import particles.corpus.refusals as refusals_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402  (freezes decay's, the query's and the use events' clocks)

_FrozenClock = oracle._FrozenClock
# The digest's third clock: the refusal hold's cutoff.
refusals_module.datetime = _FrozenClock


async def _run(request: dict) -> dict:
    from particles.config import reset_config
    from particles.operations.digest import build_digest_located

    now = datetime.fromisoformat(request["now"])
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    _FrozenClock.frozen = now
    os.environ["DATABASE_URL"] = f"sqlite+aiosqlite:///{request['store']}"
    if request.get("config"):
        os.environ["PARTICLES_CONFIG"] = request["config"]
    else:
        os.environ.pop("PARTICLES_CONFIG", None)
    reset_config()
    try:
        rendered = await build_digest_located("default", request.get("project"))
    except Exception as exc:  # compared too: particles-rs must fail where this raises
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        from particles.db import reset_engine

        await _dispose()
        reset_engine()
    return json.loads(rendered.model_dump_json())


async def _dispose() -> None:
    from particles import db

    engine = getattr(db, "_engine", None)
    if engine is not None:
        await engine.dispose()


def serve_requests(run) -> None:
    """Reads the JSON list of requests on stdin, answers each with `run` in
    order, prints the JSON list of results."""
    requests = json.load(sys.stdin)

    async def run_all():
        return [await run(r) for r in requests]

    json.dump(asyncio.run(run_all()), sys.stdout)


def main() -> None:
    serve_requests(_run)


if __name__ == "__main__":
    main()
