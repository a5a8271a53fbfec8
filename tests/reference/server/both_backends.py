"""One request through the reference's two backends: in-process and over HTTP.

    both_backends.py < request.json

Reads a QueryRequest JSON on stdin, runs it through `LocalBackend` (the store of
the configuration) and `HttpBackend` (PARTICLES_ENGINE_BASE_URL), and prints
{"local": ..., "remote": ..., "differing": [top-level fields that differ]}, each
side the response's `model_dump(mode="json")` or {"error": "..."}.
With --mcp, runs the reference's MCP `query` tool function both ways instead
(stdin: the tool's arguments), unsetting the base URL for the local side.
"""

import asyncio
import json
import os
import sys


async def _query(backend, request):
    try:
        return (await backend.query(request)).model_dump(mode="json")
    except Exception as exc:  # noqa: BLE001 - the comparison reports it
        return {"error": f"{type(exc).__name__}: {exc}"}


async def _tool(arguments, base_url):
    from particles.config import reset_config
    from particles.mcp.tools.query import query

    if base_url is None:
        os.environ.pop("PARTICLES_ENGINE_BASE_URL", None)
    else:
        os.environ["PARTICLES_ENGINE_BASE_URL"] = base_url
    reset_config()
    try:
        return await query(**arguments)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}


def main() -> None:
    payload = json.loads(sys.stdin.read())
    if "--mcp" in sys.argv:
        base_url = os.environ["PARTICLES_ENGINE_BASE_URL"]
        local = asyncio.run(_tool(payload, None))
        remote = asyncio.run(_tool(payload, base_url))
    else:
        from particles.api.client.http import HttpBackend
        from particles.api.client.local import LocalBackend
        from particles.core.schema import QueryRequest

        request = QueryRequest.model_validate(payload)
        local = asyncio.run(_query(LocalBackend(), request))
        remote = asyncio.run(_query(HttpBackend(), request))
    keys = sorted(set(local) | set(remote))
    differing = [k for k in keys if local.get(k) != remote.get(k)]
    print(json.dumps({"local": local, "remote": remote, "differing": differing}))


if __name__ == "__main__":
    main()
