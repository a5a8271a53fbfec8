#!/usr/bin/env python3
"""Run the reference's own pytest suite with every query answered a second time by particles-rs.

    python3 tests/reference/suite/run.py --cache-dir DIR --venv VENV [--work DIR] [--report FILE]

1. Makes sure the reference's sdist (linkedparticles 1.214.1) is in DIR: downloads it with
   ``pip download --no-deps --no-binary :all:`` when missing, checks its sha256, unpacks it.
   The tests are run from there; none is copied into this project.
2. Installs the test dependencies the chosen files need into VENV, pinned (``--no-deps``:
   nothing else moves). VENV must already hold the reference (see
   shared/spec/reference-harness.md); ``.reference/venv`` does.
3. Runs pytest on the selected files twice: with ``-p particles_rs_plugin`` (every
   ``retrieve_ranked`` / ``query`` / digest / memory-projection call answered again by
   particles-rs and compared; see particles_rs_plugin.py), and without it (the baseline:
   which tests fail anyway).
4. Writes a JSON report and prints a summary. Exit status 1 when a call differs or a test
   fails under the harness but passes without it; 2 when the run itself could not be made.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[2]

SDIST_NAME = "linkedparticles"
SDIST_VERSION = "1.214.1"
SDIST_FILE = f"{SDIST_NAME}-{SDIST_VERSION}.tar.gz"
SDIST_SHA256 = "17e81212cc5d9396a0e64498c0d78b675ea7eb760fa792e0168bc4da6f73a87e"

#: The sdist's `dev` dependency group (pytest>=9.0.3, pytest-asyncio>=1.3.0,
#: pytest-mock>=3.15.1, hypothesis>=6.152.4; import-linter is not needed by the chosen
#: files), pinned, with the dependencies of each. Installed with --no-deps. torch-free.
TEST_DEPENDENCIES = {
    "pytest": "9.2.0",
    "iniconfig": "2.3.1",
    "pluggy": "1.7.0",
    "packaging": "26.3",
    "Pygments": "2.21.0",
    "pytest-asyncio": "1.5.0",
    "pytest-mock": "3.17.0",
    "hypothesis": "6.170.15",  # tests/_client_fixtures.py registers a hypothesis profile
    "sortedcontainers": "2.4.0",
    "attrs": "26.1.0",
}

#: The chosen test files: (file, -k restriction or None, why). Chosen by grepping the
#: sdist's tests/ for calls to retrieve_ranked, query(, build_digest and the memory
#: projection, then keeping the files a measured run showed reaching them.
SELECTED: list[tuple[str, str | None, str]] = [
    ("tests/test_query.py", None, "query(): filters, modality, decay, collapse, refusal floor (LLM mocked)"),
    ("tests/test_query_negative_retrieval.py", None, "query() and retrieve_ranked on off-topic / observer-scoped stores"),
    ("tests/test_as_of.py", None, "query(as_of=...): believed-at-T ranking, as-of notes, undatable count"),
    ("tests/test_window_query.py", None, "query(window=...): --during / --on readings and coverage"),
    ("tests/test_structural_query.py", None, "query() structural modes: count, group-by, predicates, claim filters"),
    ("tests/test_vocabulary_report.py", None, "query(list_vocabulary=True): the vocabulary report"),
    ("tests/test_query_grounded.py", None, "query(grounded=...): cited answers and attribution"),
    ("tests/test_contested_badge.py", None, "query() and the digest: contested badges (stance, divergence, inconsistency)"),
    ("tests/test_query_contestedness.py", None, "query(include_contestedness=True): lens spread"),
    ("tests/test_query_source_trust.py", None, "query(): source-trust policy ranks"),
    ("tests/test_candidate_cache.py", None, "retrieve_ranked through the off / warm candidate cache"),
    ("tests/test_polarity.py", None, "query(): non-asserted (DECLINED / HYPOTHETICAL) beliefs left out or kept"),
    ("tests/test_document_scope.py", None, "query(): DOCUMENT_META left out or kept"),
    ("tests/test_owner_policy.py", None, "retrieve_ranked(apply_owner=True): the owner lens"),
    ("tests/test_utility_policy.py", None, "retrieve_ranked(apply_utility=True) and the digest's utility lift"),
    ("tests/test_source_tags.py", None, "retrieve_ranked(exclude_source_tags=...) and the region filter"),
    ("tests/test_projection.py", None, "projection sections: retrieve_ranked(use_embeddings=False, code_symbol_rank_weight, ...)"),
    ("tests/test_memory_projection.py", None, "the MEMORY.md region (render_memory_region) and its retrieve_ranked calls"),
    ("tests/test_app.py", "digest or projection or McpReadEndpoints or VocabularyReport or crown_jewels",
     "HTTP routes: GET /digest/{store}, POST /memory/projection/{store}, vocabulary /query"),
    ("tests/test_observer_scope_surfaces.py", "digest or WidenedMcpReads",
     "the digest and query through a project observer"),
    ("tests/test_llm_spend.py", "digest", "the digest's LLM-spend closing line"),
    ("tests/test_mcp_server.py", "DigestResource", "the MCP particles://digest resource (build_digest)"),
    ("tests/test_api_client.py", "digest or MemoryRegion", "the HTTP client's digest and memory-region round trips"),
]

#: Considered and left out: a measured run reached none of the four entry points.
CONSIDERED_NOT_SELECTED = {
    "tests/test_query_gaps.py": "tests the coverage-gap helpers directly; no query() call",
    "tests/test_query_stance.py": "tests the stance distribution helper directly; no query() call",
    "tests/test_stance.py": "stance markers; no query() call",
    "tests/test_co_evidential_query_collapse.py": "calls _collapse_co_evidential_top_k directly; no query() call",
    "tests/test_co_evidential_merge.py": "noisy-OR merge arithmetic; no query() call",
    "tests/test_relevance.py": "relevance-note helpers; no query() call",
    "tests/test_cli_query.py": "the CLI's rendering with a stubbed client; no query() call",
    "tests/test_projection_git.py": "projection git plumbing; no retrieve_ranked call",
    "tests/test_projection_manifest.py": "manifest parsing; no retrieve_ranked call",
    "tests/test_observer_scope.py": "observer predicate helpers; no query() call",
}


def log(msg: str) -> None:
    print(f"[suite] {msg}", flush=True)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ensure_sdist(cache: Path, venv_python: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / SDIST_FILE
    if not archive.exists():
        log(f"downloading {SDIST_NAME}=={SDIST_VERSION} (sdist) into {cache}")
        subprocess.run(
            [str(venv_python), "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"{SDIST_NAME}=={SDIST_VERSION}", "-d", str(cache)],
            check=True,
        )
    digest = sha256(archive)
    if digest != SDIST_SHA256:
        raise SystemExit(f"{archive}: sha256 {digest}, expected {SDIST_SHA256}")
    root = cache / f"{SDIST_NAME}-{SDIST_VERSION}"
    marker = root / ".particles-rs-unpacked"
    if not marker.exists() or marker.read_text().strip() != SDIST_SHA256:
        log(f"unpacking {archive.name}")
        with tarfile.open(archive) as tar:
            try:
                tar.extractall(cache, filter="data")
            except TypeError:  # a Python without extraction filters
                tar.extractall(cache)
        marker.write_text(SDIST_SHA256 + "\n")
    if not (root / "tests" / "conftest.py").exists():
        raise SystemExit(f"{root}: no tests/conftest.py in the unpacked sdist")
    return root


def ensure_test_dependencies(venv_python: Path) -> list[str]:
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in json.loads(sys.argv[1]):\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    have = json.loads(
        subprocess.run(
            [str(venv_python), "-c", probe, json.dumps(list(TEST_DEPENDENCIES))],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    missing = [f"{n}=={v}" for n, v in TEST_DEPENDENCIES.items() if have.get(n) != v]
    if missing:
        log("installing " + " ".join(missing))
        subprocess.run([str(venv_python), "-m", "pip", "install", "--no-deps", *missing], check=True)
    check = subprocess.run(
        [str(venv_python), "-c", "import particles.operations.query.main, pytest, pytest_asyncio, pytest_mock, hypothesis"],
        capture_output=True, text=True,
    )
    if check.returncode != 0:
        raise SystemExit("the venv cannot import the reference and pytest:\n" + check.stderr)
    return missing


def keyword_expression() -> str | None:
    parts = []
    plain = [Path(f).name for f, k, _ in SELECTED if k]
    if not plain:
        return None
    parts.append("(" + " and ".join(f"not {name}" for name in plain) + ")")
    for f, k, _ in SELECTED:
        if k:
            parts.append(f"({Path(f).name} and ({k}))")
    return " or ".join(parts)


def run_pytest(root: Path, venv_python: Path, junit: Path, log_path: Path, *, plugin: bool,
               work: Path, records: Path, binary: Path, jobs: int, files: list[str]) -> tuple[int, float]:
    argv = [str(venv_python), "-m", "pytest", *files, "-q", "-p", "no:cacheprovider",
            "-W", "ignore::pytest.PytestDeprecationWarning", f"--junitxml={junit}",
            "-o", "asyncio_default_fixture_loop_scope=function"]
    expr = keyword_expression()
    if expr:
        argv += ["-k", expr]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if plugin:
        argv[3:3] = ["-p", "particles_rs_plugin"]
        env["PYTHONPATH"] = str(HERE)
        env["PARTICLES_RS_BIN"] = str(binary)
        env["PARTICLES_RS_SUITE_WORK"] = str(work)
        env["PARTICLES_RS_SUITE_RECORDS"] = str(records)
        env["PARTICLES_RS_SUITE_JOBS"] = str(jobs)
    t0 = time.monotonic()
    with open(log_path, "w") as fh:
        proc = subprocess.run(argv, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT)
    return proc.returncode, time.monotonic() - t0


def read_junit(path: Path) -> dict[str, str]:
    """nodeid-ish -> passed | failed | error | skipped."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for tc in ET.parse(path).iter("testcase"):
        name = f"{tc.get('classname')}::{tc.get('name')}"
        state = "passed"
        for child in tc:
            if child.tag in ("failure", "error"):
                state = "failed" if child.tag == "failure" else "error"
                break
            if child.tag == "skipped":
                state = "skipped"
        if out.get(name) in ("failed", "error"):
            continue
        out[name] = state
    return out


def summarize(records_path: Path, with_plugin: dict[str, str], baseline: dict[str, str] | None,
              meta_extra: dict) -> dict:
    calls = []
    meta = {}
    with open(records_path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if rec.get("meta"):
                meta = rec
            else:
                calls.append(rec)
    status = collections.Counter(r["status"] for r in calls)
    causes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in calls:
        for c in r.get("causes") or []:
            causes[r["status"]][c] += 1
    by_file: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in calls:
        by_file[r["file"]][r["status"]] += 1
        by_kind[r["kind"]][r["status"]] += 1
    notes = collections.Counter(n[:140] for r in calls for n in r.get("notes") or [])
    snapshots = collections.Counter(r.get("snapshot") or "none" for r in calls)
    harness_notes = collections.Counter(n[:160] for r in calls for n in r.get("harness_errors") or [])
    differing = [
        {k: r.get(k) for k in ("seq", "test", "kind", "causes", "diffs", "argv", "dir", "ref_error", "rs_stderr", "notes")}
        for r in calls if r["status"] == "differ"
    ]
    ignored_keys = collections.Counter()
    mismatched_keys = collections.Counter()
    config_errors = []
    for path, chk in (meta.get("config_checks") or {}).items():
        for k in chk.get("ignored") or []:
            ignored_keys[k] += 1
        for m in chk.get("mismatched") or []:
            mismatched_keys[m["key"]] += 1
        if chk.get("error"):
            config_errors.append({"config": path, "error": chk["error"]})

    pytest_counts = collections.Counter(with_plugin.values())
    failing_with = sorted(t for t, s in with_plugin.items() if s in ("failed", "error"))
    pre_existing, harness_caused = [], []
    if baseline is not None:
        for t in failing_with:
            (pre_existing if baseline.get(t) in ("failed", "error") else harness_caused).append(t)
    else:
        harness_caused = failing_with
    baseline_counts = collections.Counter((baseline or {}).values())
    failing_without_only = sorted(
        t for t, s in (baseline or {}).items() if s in ("failed", "error") and with_plugin.get(t) not in ("failed", "error")
    )
    return {
        "calls": len(calls),
        "compared": status["equal"] + status["differ"],
        "equal": status["equal"],
        "differing": status["differ"],
        "refused": status["refused"],
        "not_translatable": status["not_translatable"],
        "harness_errors": status["harness_error"],
        "causes": {s: dict(c.most_common()) for s, c in causes.items()},
        "by_file": {f: dict(c) for f, c in sorted(by_file.items())},
        "by_kind": {k: dict(c) for k, c in sorted(by_kind.items())},
        "notes": dict(notes.most_common()),
        "store_copies": dict(snapshots.most_common()),
        "harness_notes": dict(harness_notes.most_common()),
        "config_keys_particles_rs_ignores": dict(ignored_keys.most_common()),
        "config_values_read_differently": dict(mismatched_keys.most_common()),
        "config_errors": config_errors,
        "pytest_with_harness": dict(pytest_counts),
        "pytest_without_harness": dict(baseline_counts),
        "tests_failing_under_harness": failing_with,
        "failing_pre_existing": pre_existing,
        "failing_because_of_harness": harness_caused,
        "failing_only_without_harness": failing_without_only,
        "bindings_patched": meta.get("bindings"),
        "install_errors": meta.get("install_errors"),
        "reference_package": meta.get("particles_file"),
        "differing_calls": differing,
        **meta_extra,
    }


def print_summary(rep: dict) -> None:
    p = print
    p("")
    p("== particles-rs beside the reference's own tests ==")
    p(f"intercepted calls: {rep['calls']}   compared: {rep['compared']}   equal: {rep['equal']}   "
      f"differing: {rep['differing']}   refused: {rep['refused']}   not translatable: {rep['not_translatable']}   "
      f"harness errors: {rep['harness_errors']}")
    for status in ("differ", "refused", "not_translatable", "harness_error"):
        causes = rep["causes"].get(status)
        if not causes:
            continue
        p(f"-- {status} causes:")
        for c, n in causes.items():
            p(f"   {n:5d}  {c}")
    if rep["notes"]:
        p("-- notes (compared with a caveat):")
        for c, n in rep["notes"].items():
            p(f"   {n:5d}  {c}")
    p("-- store copies: " + "  ".join(f"{k}={n}" for k, n in rep["store_copies"].items()))
    p("-- by kind:")
    for k, c in rep["by_kind"].items():
        p(f"   {k:18s} " + "  ".join(f"{s}={n}" for s, n in sorted(c.items())))
    p("-- by test file:")
    for f, c in rep["by_file"].items():
        p(f"   {f:45s} " + "  ".join(f"{s}={n}" for s, n in sorted(c.items())))
    if rep["config_keys_particles_rs_ignores"] or rep["config_values_read_differently"] or rep["config_errors"]:
        p("-- configuration: keys particles-rs ignores: " + json.dumps(rep["config_keys_particles_rs_ignores"]))
        p("   values read differently: " + json.dumps(rep["config_values_read_differently"]))
        for e in rep["config_errors"]:
            p(f"   config refused: {e['error'][:300]}")
    else:
        p("-- configuration: every key of every captured configuration is read by particles-rs with the same value")
    p(f"-- pytest with the harness: {rep['pytest_with_harness']}   without: {rep['pytest_without_harness']}")
    if rep["failing_pre_existing"]:
        p(f"   failing anyway (pre-existing): {len(rep['failing_pre_existing'])}")
        for t in rep["failing_pre_existing"]:
            p(f"     {t}")
    if rep["failing_because_of_harness"]:
        p(f"   FAILING ONLY UNDER THE HARNESS: {len(rep['failing_because_of_harness'])}")
        for t in rep["failing_because_of_harness"]:
            p(f"     {t}")
    if rep["differing_calls"]:
        p("-- differing calls:")
        for d in rep["differing_calls"]:
            p(f"   #{d['seq']} {d['kind']} {d['test']}: {'; '.join(d['causes'] or [])}")
    p(f"-- times: harness run {rep['seconds_with_harness']:.0f} s, baseline {rep.get('seconds_without_harness') or 0:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", required=True, type=Path, help="where the sdist is kept (downloaded when missing)")
    ap.add_argument("--venv", required=True, type=Path, help="the venv with the reference installed")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default /tmp/suite-run-<time>)")
    ap.add_argument("--report", type=Path, default=None, help="the JSON report (default WORK/report.json)")
    ap.add_argument("--binary", type=Path, default=PROJECT / "target" / "debug" / "particles-rs")
    ap.add_argument("--jobs", type=int, default=1, help="particles-rs comparisons running beside pytest")
    ap.add_argument("--no-baseline", action="store_true", help="skip the run without the harness")
    ap.add_argument("--files", nargs="*", default=None, help="run these test files instead of the selection")
    args = ap.parse_args()
    # Absolute: pytest runs from the unpacked sdist, not from here.
    args.venv = args.venv.absolute()
    args.cache_dir = args.cache_dir.absolute()
    args.binary = args.binary.absolute()
    if args.work is not None:
        args.work = args.work.absolute()

    venv_python = args.venv / "bin" / "python"
    if not venv_python.exists():
        print(f"no python in {args.venv}", file=sys.stderr)
        return 2
    work = args.work or Path(f"/tmp/suite-run-{time.strftime('%Y%m%d-%H%M%S')}")
    work.mkdir(parents=True, exist_ok=True)
    report_path = args.report or work / "report.json"
    records = work / "records.jsonl"
    if records.exists():
        records.unlink()

    root = ensure_sdist(args.cache_dir, venv_python)
    installed = ensure_test_dependencies(venv_python)
    files = args.files or [f for f, _, _ in SELECTED]
    for f in files:
        if not (root / f).exists():
            print(f"{root / f}: missing from the sdist", file=sys.stderr)
            return 2
    if not args.binary.exists():
        print(f"{args.binary}: no particles-rs binary (build it first)", file=sys.stderr)
        return 2

    chk = subprocess.run([str(venv_python), str(HERE / "selfcheck.py")], capture_output=True, text=True,
                         cwd=str(work))
    try:
        selfcheck = json.loads(chk.stdout.strip().splitlines()[-1])
    except Exception:
        selfcheck = {"ok": False, "stdout": chk.stdout[-2000:], "stderr": chk.stderr[-2000:]}
    log("store-copy self-check (uncommitted writes included): " + ("ok" if selfcheck.get("ok") else "FAILED"))
    if not selfcheck.get("ok"):
        print(json.dumps(selfcheck, indent=1), file=sys.stderr)
        return 2

    log(f"pytest with the harness on {len(files)} files (work dir {work})")
    rc_with, t_with = run_pytest(root, venv_python, work / "junit-harness.xml", work / "pytest-harness.log",
                                 plugin=True, work=work, records=records, binary=args.binary,
                                 jobs=args.jobs, files=files)
    baseline = None
    t_without = None
    if not args.no_baseline:
        log("pytest without the harness (baseline)")
        _, t_without = run_pytest(root, venv_python, work / "junit-baseline.xml", work / "pytest-baseline.log",
                                  plugin=False, work=work, records=records, binary=args.binary,
                                  jobs=args.jobs, files=files)
        baseline = read_junit(work / "junit-baseline.xml")
    with_plugin = read_junit(work / "junit-harness.xml")
    if not records.exists() or not with_plugin:
        print(f"the harness run produced no records or no results; see {work / 'pytest-harness.log'}", file=sys.stderr)
        return 2
    rep = summarize(records, with_plugin, baseline, {
        "seconds_with_harness": t_with,
        "seconds_without_harness": t_without,
        "pytest_exit_with_harness": rc_with,
        "selected_files": [{"file": f, "k": k, "why": why} for f, k, why in SELECTED if f in files],
        "considered_not_selected": CONSIDERED_NOT_SELECTED,
        "test_dependencies": TEST_DEPENDENCIES,
        "installed_now": installed,
        "store_copy_selfcheck": selfcheck,
        "sdist": str(root),
        "binary": str(args.binary),
        "work": str(work),
        "records": str(records),
    })
    report_path.write_text(json.dumps(rep, indent=1, default=repr))
    print_summary(rep)
    print(f"\nreport: {report_path}")
    failed = rep["differing"] > 0 or bool(rep["failing_because_of_harness"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
