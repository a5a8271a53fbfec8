"""The reference's own clients pointed at two engines, call for call.

    client_matrix.py < setup.json

setup.json: {"ours": URL, "upstream": URL, "particles": PATH, "texts": {name:
text}}. `ours` is particles-rs `serve --http` forwarding to `upstream`, the
reference's own engine on the same store file; `particles` is the reference's
CLI. Two `particles mcp serve` processes are started through the MCP SDK's
stdio client, one with PARTICLES_ENGINE_BASE_URL at each engine, and every tool
of the reference's surface is called on both; a write goes through ours alone,
then the reads that show it are called on both. The reference's CLI verbs that
have a remote route run both ways too.

Prints {"tools": {"ours": [...], "upstream": [...]}, "written": {"asserted":
[id, id], "successor": id}, "steps": [...]}: each step {"label", "kind":
"tool"|"cli", "name", "arguments", "write", "expect_error" (null: either),
"ours", "upstream"}, each side's result {"is_error", "text", "structured"} for
a tool and {"exit", "stdout", "stderr"} for the CLI (`upstream` is null for a
write). Nothing is compared here: the Rust test holds both sides to each other.
"""

import asyncio
import json
import os
import subprocess
import sys
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def _environment(base_url):
    env = dict(os.environ)
    env["PARTICLES_ENGINE_BASE_URL"] = base_url
    return env


def _tool_result(result):
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return {"is_error": bool(result.isError), "text": "\n".join(texts),
            "structured": result.structuredContent}


def _parsed(side):
    """The tool's value: its structured content (a list comes wrapped in
    {"result": ...}), else its text as JSON."""
    structured = side.get("structured")
    if isinstance(structured, dict):
        return structured["result"] if set(structured) == {"result"} else structured
    try:
        return json.loads(side["text"])
    except (ValueError, KeyError, TypeError):
        return None


def _verb(args):
    """The verb a CLI call names: `query`, or a group and its command."""
    return args[0] if args[0] in ("query", "quality", "lint", "review") else " ".join(args[:2])


class Matrix:
    def __init__(self, setup, sessions):
        self.setup = setup
        self.sessions = sessions
        self.steps = []

    async def tool(self, label, name, arguments, write=False, expect_error=False):
        ours = _tool_result(await self.sessions["ours"].call_tool(name, arguments))
        upstream = None
        if not write:
            upstream = _tool_result(await self.sessions["upstream"].call_tool(name, arguments))
        self.steps.append({"label": label, "kind": "tool", "name": name, "arguments": arguments,
                           "write": write, "expect_error": expect_error, "ours": ours,
                           "upstream": upstream})
        return _parsed(ours)

    def cli(self, label, args, may_fail=False):
        sides = {}
        for side in ("ours", "upstream"):
            done = subprocess.run([self.setup["particles"], *args], capture_output=True, text=True,
                                  env=_environment(self.setup[side]), timeout=300)
            sides[side] = {"exit": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
        self.steps.append({"label": label, "kind": "cli", "name": _verb(args),
                           "arguments": args, "write": False,
                           "expect_error": None if may_fail else False, **sides})


async def _reads(m, tag, cli):
    """Every read tool, and with `cli` the CLI verbs with a remote route, on both engines."""
    texts = m.setup["texts"]
    listing = await m.tool(f"{tag}: particles_list", "particles_list", {"limit": 20})
    await m.tool(f"{tag}: particles_list ACTIVE, offset", "particles_list",
                 {"status": "ACTIVE", "limit": 5, "offset": 3})
    particles = (listing or {}).get("particles") or []
    subjects = await m.tool(f"{tag}: subjects_list", "subjects_list", {"limit": 20}) or []
    await m.tool(f"{tag}: subjects_list by degree", "subjects_list", {"limit": 5, "order": "degree"})
    if subjects:
        subject = subjects[0]
        await m.tool(f"{tag}: subjects_show", "subjects_show", {"subject_id": subject["id"]})
        await m.tool(f"{tag}: subjects_search", "subjects_search",
                     {"query": subject["canonical_name"][:4]})
        await m.tool(f"{tag}: particles_list of a subject", "particles_list",
                     {"subject_id": subject["id"], "limit": 10})
    for particle in particles[:3]:
        await m.tool(f"{tag}: particle_show", "particle_show", {"particle_id": particle["id"]})
    await m.tool(f"{tag}: particle_show, unknown id", "particle_show",
                 {"particle_id": "00000000-0000-4000-8000-000000000000"}, expect_error=True)
    fingerprints = [p.get("context_fingerprint") for p in particles if p.get("context_fingerprint")]
    # A fingerprint no belief has still runs the search (it must be hex).
    await m.tool(f"{tag}: particle_search", "particle_search",
                 {"fingerprint": fingerprints[0] if fingerprints else "0123456789abcdef"})
    await m.tool(f"{tag}: list_taxonomies", "list_taxonomies", {})
    entries = await m.tool(f"{tag}: list_corpus_entries", "list_corpus_entries", {"limit": 20}) or []
    await m.tool(f"{tag}: corpus_links_suggest", "corpus_links_suggest", {})
    await m.tool(f"{tag}: quality_report", "quality_report", {})
    await m.tool(f"{tag}: lint", "lint", {"limit": 20})
    await m.tool(f"{tag}: lint summary", "lint", {"summary_only": True})
    await m.tool(f"{tag}: links_suggest", "links_suggest", {"limit": 20})
    events = await m.tool(f"{tag}: events_list", "events_list", {"limit": 20}) or []
    if events:
        await m.tool(f"{tag}: event_show", "event_show", {"event_id": events[0]["event_id"]})
    if subjects:
        await m.tool(f"{tag}: graph_view of a subject", "graph_view",
                     {"subject_id": subjects[0]["id"], "max_nodes": 30})
    await m.tool(f"{tag}: graph_view of a question", "graph_view",
                 {"query": texts["question_a"], "max_nodes": 30})
    for name, question in sorted(texts.items()):
        if name.startswith("question"):
            await m.tool(f"{tag}: query {name}", "query", {"question": question, "top_k": 8})
            await m.tool(f"{tag}: query {name}, summary", "query",
                         {"question": question, "top_k": 5, "summary": True})
    await m.tool(f"{tag}: query, listing by claim filter", "query", {"predicate": "weight"})
    await m.tool(f"{tag}: query, predicates", "query", {"list_predicates": True})
    await m.tool(f"{tag}: query, count", "query", {"predicate": "weight", "count": True})

    if not cli:
        return
    if particles:
        m.cli(f"{tag}: particle show", ["particle", "show", particles[0]["id"]])
        # Exit 1 when the passage is unavailable (the generator keeps no blobs).
        m.cli(f"{tag}: particle source", ["particle", "source", particles[0]["id"]],
              may_fail=True)
    if fingerprints:
        m.cli(f"{tag}: particle search", ["particle", "search", fingerprints[0]])
    m.cli(f"{tag}: subjects list", ["subjects", "list"])
    if subjects:
        m.cli(f"{tag}: subjects show", ["subjects", "show", subjects[0]["id"]])
        m.cli(f"{tag}: subjects search", ["subjects", "search", subjects[0]["canonical_name"][:4]])
    if entries:
        m.cli(f"{tag}: corpus show", ["corpus", "show", entries[0]["entry_id"]])
    m.cli(f"{tag}: events list", ["events", "list"])
    if events:
        m.cli(f"{tag}: events show", ["events", "show", events[0]["event_id"]])
    m.cli(f"{tag}: links suggest", ["links", "suggest", "--all"])
    m.cli(f"{tag}: quality", ["quality"])
    m.cli(f"{tag}: lint", ["lint"])
    m.cli(f"{tag}: review", ["review"])
    for name, question in sorted(texts.items()):
        if name.startswith("question"):
            m.cli(f"{tag}: query {name}", ["query", question, "--top-k", "6", "--show-particles"])


async def _writes(m):
    """Each write tool through ours, and after it the reads that show it, both ways."""
    texts = m.setup["texts"]

    async def after(label, **query):
        await m.tool(f"after {label}: query", "query", {"top_k": 8, **query})

    deposit = await m.tool("deposit_text", "deposit_text",
                           {"text": texts["deposit"], "tags": ["matrix"]}, write=True) or {}
    await m.tool("after deposit_text: list_corpus_entries", "list_corpus_entries", {"limit": 50})
    first = await m.tool("particle_assert", "particle_assert", {
        "content": texts["question_a"], "subject_names": ["Matrix coin"], "confidence": 0.9,
        "corpus_entry_id": deposit.get("corpus_entry_id")}, write=True) or {}
    await after("particle_assert", question=texts["question_a"])
    second = await m.tool("particle_assert, a second", "particle_assert", {
        "content": texts["question_b"], "subject_names": ["Matrix coin"], "confidence": 0.8,
        "source_excerpt": texts["deposit"]}, write=True) or {}
    await after("the second particle_assert", question=texts["question_b"])
    a, b = first.get("asserted_particle_id"), second.get("asserted_particle_id")
    await m.tool("particle_tag", "particle_tag", {"particle_id": a, "tags": ["matrix-tag"]}, write=True)
    await after("particle_tag", question=texts["question_a"], tags=["matrix-tag"])
    await m.tool("link_add", "link_add", {"particle_a": a, "particle_b": b}, write=True)
    await after("link_add", question=texts["question_a"])
    await m.tool("link_remove", "link_remove", {"particle_a": a, "particle_b": b}, write=True)
    await after("link_remove", question=texts["question_a"])
    await m.tool("particle_untag", "particle_untag", {"particle_id": a, "tags": ["matrix-tag"]},
                 write=True)
    await after("particle_untag", question=texts["question_a"])
    successor = await m.tool("particle_supersede", "particle_supersede", {
        "supersedes_id": a, "content": texts["question_c"], "subject_names": ["Matrix coin"],
        "confidence": 0.85, "source_excerpt": texts["deposit"], "reason": "matrix revision"},
        write=True) or {}
    await after("particle_supersede", question=texts["question_c"])
    await m.tool("particle_retract", "particle_retract",
                 {"particle_id": b, "reason": "matrix retraction"}, write=True)
    await after("particle_retract", question=texts["question_b"])
    return {"asserted": [a, b], "successor": successor.get("asserted_particle_id")}


async def main():
    setup = json.loads(sys.stdin.read())
    async with AsyncExitStack() as stack:
        sessions, tools = {}, {}
        for side in ("ours", "upstream"):
            params = StdioServerParameters(command=setup["particles"], args=["mcp", "serve"],
                                           env=_environment(setup[side]))
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            tools[side] = [t.name for t in (await session.list_tools()).tools]
            sessions[side] = session
        m = Matrix(setup, sessions)
        await _reads(m, "before the writes", cli=False)
        written = await _writes(m)
        await _reads(m, "after the writes", cli=True)
    print(json.dumps({"tools": tools, "written": written, "steps": m.steps}))


if __name__ == "__main__":
    asyncio.run(main())
