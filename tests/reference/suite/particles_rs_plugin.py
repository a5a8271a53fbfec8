"""pytest plugin: answer the reference's own query calls a second time with particles-rs.

Loaded into a run of the reference's pytest suite (from its sdist) with
``-p particles_rs_plugin`` (this directory on ``PYTHONPATH``). It wraps, in every
module that binds them by name:

* ``particles.operations.query.main.retrieve_ranked``  -> ``particles-rs query --json``
* ``particles.operations.query.main.query``            -> ``particles-rs query --response-json``
* ``particles.operations.digest.build_digest_located`` / ``build_digest``
                                                       -> ``particles-rs digest --json``
* ``particles.operations.projection.memory_region.render_memory_region``
  (what ``POST /memory/projection/{store}`` calls)     -> ``particles-rs memory-region --json``
  (the ``retrieve_ranked`` calls inside it are compared on their own as well).

Per call the original runs first and its result (or exception) is what the test
gets, untouched. Then, never raising into the test:

1. the reference's result is serialised at once (ids, float bits, JSON);
2. the test's database is copied as the call saw it: the sqlite3 connection under
   the call's AsyncSession (for the digest, the store handle's engine) is reached
   on aiosqlite's own thread and copied with sqlite3's backup API, or, when that
   connection holds an open write transaction (which the backup API refuses with
   SQLITE_LOCKED), with ``Connection.serialize()``, which reads through the same
   pager and so includes the session's flushed but uncommitted writes;
3. the inputs are captured: the query vector ``_gather_scored`` received, the
   instant decay was evaluated at (the harness freezes the ``datetime`` of every
   ``particles.*`` module during the call, unless the test already replaced it, in
   which case the test's clock is read), the live ``get_config()`` written as YAML,
   and every argument;
4. a background worker asks particles-rs the same question on the copy and compares
   exactly; one JSON line per call goes to the records file.

Environment: PARTICLES_RS_BIN (binary), PARTICLES_RS_SUITE_WORK (scratch dir),
PARTICLES_RS_SUITE_RECORDS (JSON lines out), PARTICLES_RS_SUITE_JOBS (workers, 1),
PARTICLES_RS_SUITE_KEEP (keep every call's files, not only differing ones).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import itertools
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime as _RealDatetime
from datetime import timezone
from typing import Any

import pytest

_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("particles_rs_call", default=None)

#: (module, attribute, kind) of every intercepted entry point.
TARGETS = [
    ("particles.operations.query.main", "retrieve_ranked", "retrieve_ranked"),
    ("particles.operations.query.main", "query", "query"),
    ("particles.operations.digest", "build_digest_located", "digest_located"),
    ("particles.operations.digest", "build_digest", "digest"),
    ("particles.operations.projection.memory_region", "render_memory_region", "projection"),
]

#: QueryResponse fields that carry the answer step's output.
ANSWER_FIELDS = (
    "answer",
    "answer_generation_error",
    "answer_generation_error_cause",
    "answer_refused",
    "answer_attribution",
)


# --------------------------------------------------------------------------- clock


class _FrozenMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _RealDatetime)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _RealDatetime)


class _FrozenDatetime(_RealDatetime, metaclass=_FrozenMeta):
    """``datetime`` whose ``now`` / ``utcnow`` return the harness's frozen instant."""

    frozen: _RealDatetime = _RealDatetime.now(timezone.utc)

    @classmethod
    def now(cls, tz=None):  # noqa: D102
        value = cls.frozen
        if tz is None:
            return value.astimezone().replace(tzinfo=None)
        return value.astimezone(tz)

    @classmethod
    def utcnow(cls):  # noqa: D102
        return cls.frozen.astimezone(timezone.utc).replace(tzinfo=None)


class _Clock:
    """Freeze the wall clock of every ``particles.*`` module for an intercepted call.

    Nested or concurrent intercepted calls share one frozen instant (a depth count).
    A test that replaced ``particles.core.scoring.decay.datetime`` itself (freezegun,
    monkeypatch) keeps its clock: the harness only reads the instant from it.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.patched: list[tuple[Any, str]] = []
        self.how = ""

    def enter(self) -> tuple[_RealDatetime, str]:
        if self.depth > 0:
            self.depth += 1
            return _FrozenDatetime.frozen, self.how
        decay = sys.modules.get("particles.core.scoring.decay")
        clock = getattr(decay, "datetime", _RealDatetime) if decay is not None else _RealDatetime
        if clock is _RealDatetime:
            now = _RealDatetime.now(timezone.utc)
            _FrozenDatetime.frozen = now
            patched = []
            for name, mod in list(sys.modules.items()):
                if mod is None or not (name == "particles" or name.startswith("particles.")):
                    continue
                try:
                    if mod.__dict__.get("datetime") is _RealDatetime:
                        mod.datetime = _FrozenDatetime
                        patched.append((mod, "datetime"))
                except Exception:
                    continue
            self.patched = patched
            self.how = "frozen by harness"
        else:
            now = clock.now(timezone.utc)
            if now.tzinfo is None:
                now = now.replace(tzinfo=timezone.utc)
            _FrozenDatetime.frozen = now
            self.patched = []
            self.how = f"test's own clock ({getattr(clock, '__name__', clock)!r})"
        self.depth = 1
        return now, self.how

    def leave(self) -> None:
        self.depth -= 1
        if self.depth > 0:
            return
        for mod, attr in self.patched:
            try:
                if mod.__dict__.get(attr) is _FrozenDatetime:
                    setattr(mod, attr, _RealDatetime)
            except Exception:
                pass
        self.patched = []


# --------------------------------------------------------------------------- per call


class CallCtx:
    def __init__(self, kind: str, seq: int, test: str | None) -> None:
        self.kind = kind
        self.seq = seq
        self.test = test
        self.now: _RealDatetime | None = None
        self.clock_how = ""
        self.gather_seen = False
        self.query_emb: Any = None
        self.query_emb_dtype: str | None = None
        self.gen_hooked = True
        self.gen: tuple[str, str | None] | None = None
        self.notes: list[str] = []
        self.harness_errors: list[str] = []
        self.clock_entered = False


def _f(x: Any) -> float | None:
    return None if x is None else float(x)


def _hex(x: Any) -> str | None:
    if x is None:
        return None
    try:
        return float(x).hex()
    except Exception:
        return repr(x)


class Harness:
    def __init__(self) -> None:
        self.bin = os.environ.get("PARTICLES_RS_BIN", "/work/main/target/debug/particles-rs")
        work = os.environ.get("PARTICLES_RS_SUITE_WORK")
        if not work:
            work = tempfile.mkdtemp(prefix="suite-run-", dir="/tmp")
        os.makedirs(work, exist_ok=True)
        self.work = work
        self.records_path = os.environ.get(
            "PARTICLES_RS_SUITE_RECORDS", os.path.join(work, "records.jsonl")
        )
        self.keep_all = bool(os.environ.get("PARTICLES_RS_SUITE_KEEP"))
        self.pool = ThreadPoolExecutor(
            max_workers=int(os.environ.get("PARTICLES_RS_SUITE_JOBS", "1") or "1"),
            thread_name_prefix="particles-rs-compare",
        )
        self.futures: list[Any] = []
        self.seq = itertools.count(1)
        self.lock = threading.Lock()
        self.current_test: str | None = None
        self.clock = _Clock()
        self.originals: dict[str, Any] = {}
        self.wrappers: dict[str, Any] = {}
        self.bindings: dict[str, list[str]] = {}
        self.cfg_paths: dict[str, str] = {}
        self.cfg_checks: dict[str, dict[str, Any]] = {}
        self.cfg_lock = threading.Lock()
        self.gather_recorder: Any = None
        self.gen_recorder: Any = None
        self.install_errors: list[str] = []
        self.scanned: set[str] = set()
        self.home = os.path.join(work, "home")
        os.makedirs(self.home, exist_ok=True)
        open(self.records_path, "a").close()

    # ------------------------------------------------------------- installing

    def install(self) -> None:
        import importlib

        for modname, attr, kind in TARGETS:
            try:
                mod = importlib.import_module(modname)
                orig = getattr(mod, attr)
            except Exception as exc:  # pragma: no cover - reported
                self.install_errors.append(f"{modname}.{attr}: {type(exc).__name__}: {exc}")
                continue
            self.originals[kind] = orig
            self.wrappers[kind] = self._make_wrapper(kind, orig)
        try:
            main = importlib.import_module("particles.operations.query.main")
            self.gather_recorder = self._make_gather_recorder(main._gather_scored)
            main._gather_scored = self.gather_recorder
            self.gen_recorder = self._make_gen_recorder(main._generate_response)
            main._generate_response = self.gen_recorder
        except Exception as exc:  # pragma: no cover - reported
            self.install_errors.append(f"recorders: {type(exc).__name__}: {exc}")
        self.rebind()

    def rebind(self, *, all_modules: bool = False) -> None:
        """Point every module attribute bound to an original at its wrapper.

        Modules already scanned are skipped unless ``all_modules``: a module binds a
        name at import time, and a later ``monkeypatch`` restores our wrapper.
        """
        by_id = {id(orig): (kind, orig) for kind, orig in self.originals.items()}
        for name, mod in list(sys.modules.items()):
            if mod is None:
                continue
            if not all_modules and name in self.scanned:
                continue
            self.scanned.add(name)
            try:
                items = list(vars(mod).items())
            except Exception:
                continue
            for attr, value in items:
                hit = by_id.get(id(value))
                if hit is None or hit[1] is not value:
                    continue
                kind = hit[0]
                try:
                    setattr(mod, attr, self.wrappers[kind])
                except Exception:
                    continue
                self.bindings.setdefault(kind, []).append(f"{name}.{attr}")

    # ------------------------------------------------------------- recorders

    def _make_gather_recorder(self, orig: Any) -> Any:
        @functools.wraps(orig)
        async def _gather_scored(session, request, query_emb, *args, **kwargs):
            ctx = _CURRENT.get()
            if ctx is not None and not ctx.gather_seen:
                ctx.gather_seen = True
                try:
                    if query_emb is None:
                        ctx.query_emb = None
                    else:
                        import numpy as np

                        arr = np.asarray(query_emb)
                        ctx.query_emb_dtype = str(arr.dtype)
                        ctx.query_emb = [float(v) for v in arr.reshape(-1).tolist()]
                except Exception as exc:
                    ctx.harness_errors.append(f"capturing the query vector: {exc!r}")
            return await orig(session, request, query_emb, *args, **kwargs)

        _gather_scored.__particles_rs_recorder__ = True  # type: ignore[attr-defined]
        return _gather_scored

    def _make_gen_recorder(self, orig: Any) -> Any:
        @functools.wraps(orig)
        async def _generate_response(*args, **kwargs):
            ctx = _CURRENT.get()
            try:
                result = await orig(*args, **kwargs)
            except BaseException as exc:
                if ctx is not None:
                    ctx.gen = ("raised", f"{type(exc).__name__}: {exc}")
                raise
            if ctx is not None:
                ctx.gen = ("returned", None)
            return result

        return _generate_response

    # ------------------------------------------------------------- the wrapper

    def _make_wrapper(self, kind: str, orig: Any) -> Any:
        harness = self

        @functools.wraps(orig)
        async def wrapper(*args, **kwargs):
            outer = _CURRENT.get()
            if outer is not None and outer.kind.startswith("digest") and kind.startswith("digest"):
                # build_digest -> build_digest_located: one comparison, the outer one.
                return await orig(*args, **kwargs)
            ctx = None
            token = None
            try:
                ctx = CallCtx(kind, next(harness.seq), harness.current_test)
                if kind == "query":
                    main = sys.modules.get("particles.operations.query.main")
                    ctx.gen_hooked = (
                        main is not None and main.__dict__.get("_generate_response") is harness.gen_recorder
                    )
                ctx.now, ctx.clock_how = harness.clock.enter()
                ctx.clock_entered = True
                token = _CURRENT.set(ctx)
            except BaseException as exc:  # never into the test
                if ctx is not None:
                    ctx.harness_errors.append(f"before the call: {exc!r}")
            try:
                result = await orig(*args, **kwargs)
            except BaseException as exc:
                harness._leave(ctx, token)
                if not isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)):
                    await harness._after_safe(ctx, args, kwargs, None, exc)
                raise
            harness._leave(ctx, token)
            await harness._after_safe(ctx, args, kwargs, result, None)
            return result

        wrapper.__particles_rs_wrapper__ = True  # type: ignore[attr-defined]
        return wrapper

    def _leave(self, ctx: CallCtx | None, token: Any) -> None:
        try:
            if token is not None:
                _CURRENT.reset(token)
        except Exception:
            pass
        try:
            if ctx is not None and ctx.clock_entered:
                ctx.clock_entered = False
                self.clock.leave()
        except Exception:
            pass

    async def _after_safe(self, ctx, args, kwargs, result, exc) -> None:
        if ctx is None:
            return
        try:
            job = await self._capture(ctx, args, kwargs, result, exc)
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # a harness failure never fails the test
            job = self._base_job(ctx)
            job["status"] = "harness_error"
            job["causes"] = [f"harness: capture failed: {type(err).__name__}: {err}"]
            job["traceback"] = traceback.format_exc(limit=6)
            self._write(job)
            return
        if job.get("status"):
            self._write(job)
            return
        self.futures.append(self.pool.submit(self._run_job_safe, job))

    # ------------------------------------------------------------- capture

    def _base_job(self, ctx: CallCtx) -> dict[str, Any]:
        test = ctx.test or "(outside a test)"
        return {
            "seq": ctx.seq,
            "kind": ctx.kind,
            "test": test,
            "file": test.split("::", 1)[0],
            "notes": list(ctx.notes),
            "harness_errors": list(ctx.harness_errors),
        }

    async def _capture(self, ctx: CallCtx, args, kwargs, result, exc) -> dict[str, Any]:
        job = self._base_job(ctx)
        job["ref_error"] = None if exc is None else f"{type(exc).__name__}: {exc}"
        calldir = os.path.join(self.work, "calls", f"{ctx.seq:05d}")
        os.makedirs(calldir, exist_ok=True)
        job["dir"] = calldir

        if ctx.kind == "projection":
            bound = _bind(self.originals[ctx.kind], args, kwargs)
            session = bound.get("session")
            job["args"] = _describe_args(bound)
            if exc is None:
                job["ref"] = {
                    "body": result.body,
                    "content_hash": result.content_hash,
                    "fold_verdicts": dict(result.fold_verdicts),
                    "fold_order": list(result.fold_verdicts),
                }
            snap = os.path.join(calldir, "store.db")
            job["snapshot"] = await _snapshot_session(session, snap, flush=exc is None)
            job["store"] = snap
            manifest = bound.get("manifest")
            manifest_path = os.path.join(calldir, "manifest.json")
            with open(manifest_path, "w", encoding="utf-8") as fh:
                json.dump(manifest.model_dump(mode="json"), fh, ensure_ascii=False)
            job["manifest"] = manifest_path
            base_dir = bound.get("base_dir")
            job["base_dir"] = None if base_dir is None else os.path.abspath(str(base_dir))
            job["observer_project"] = bound.get("observer_project")
            job["exclude_source_tags"] = list(bound.get("exclude_source_tags") or [])
            job["fold_targets"] = list(bound.get("fold_targets") or [])
            cfg_mod = sys.modules.get("particles.operations.projection.project")
        elif ctx.kind in ("retrieve_ranked", "query"):
            bound = _bind(self.originals[ctx.kind], args, kwargs)
            session = bound.get("session")
            request = bound.get("request")
            job["args"] = _describe_args(bound)
            # 1. the reference's answer, serialised now (the test may change it later)
            if exc is None:
                if ctx.kind == "retrieve_ranked":
                    job["ref"] = [
                        {"id": p.id, "sim": _hex(sim), "eff": _hex(eff)} for p, sim, eff in result
                    ]
                else:
                    job["ref"] = json.loads(result.model_dump_json())
            # 2. the database as the call saw it
            snap = os.path.join(calldir, "store.db")
            job["snapshot"] = await _snapshot_session(session, snap, flush=exc is None)
            job["store"] = snap
            # 3. inputs
            job["request"] = json.loads(request.model_dump_json()) if request is not None else None
            job["request_set"] = sorted(request.model_fields_set) if request is not None else []
            job["use_embeddings"] = bound.get("use_embeddings", True)
            for extra in ("code_symbol_rank_weight", "conflict_pairs", "apply_utility", "apply_owner", "exclude_source_tags"):
                if extra in bound:
                    v = bound[extra]
                    if extra == "conflict_pairs" and v is not None:
                        v = sorted(sorted(pair) for pair in v)
                    elif extra == "exclude_source_tags":
                        v = list(v)
                    job[extra] = v
            job["vector_captured"] = ctx.gather_seen
            job["vector"] = ctx.query_emb
            job["vector_dtype"] = ctx.query_emb_dtype
            if ctx.kind == "query":
                job["gen_hooked"] = ctx.gen_hooked
                job["gen"] = ctx.gen
            cfg_mod = sys.modules.get("particles.operations.query.main")
        else:  # digest
            bound = _bind(self.originals[ctx.kind], args, kwargs)
            store = bound.get("store")
            job["args"] = _describe_args(bound)
            job["observer_project"] = bound.get("observer_project")
            job["store_handle"] = str(store)
            if exc is None:
                if ctx.kind == "digest":
                    job["ref"] = {"markdown": result}
                else:
                    job["ref"] = json.loads(result.model_dump_json())
            snap = os.path.join(calldir, "store.db")
            from particles.db import get_engine

            try:
                engine = get_engine(store)
                async with engine.connect() as conn:
                    job["snapshot"] = await _snapshot_connection(conn, snap)
                job["store"] = snap
            except Exception as err:
                if exc is None:
                    raise
                # the reference failed too (e.g. an unknown handle): ask particles-rs
                # under the same handle, with no store behind it
                job["store"] = None
                job["notes"].append(f"no snapshot: {type(err).__name__}: {err}")
            cfg_mod = sys.modules.get("particles.operations.digest")
        job["now"] = ctx.now.isoformat() if ctx.now is not None else None
        job["clock"] = ctx.clock_how
        job["config"] = self._config_file(cfg_mod)
        return job

    def _config_file(self, mod: Any) -> str:
        import yaml

        get_config = getattr(mod, "get_config", None)
        if get_config is None:
            from particles.config import get_config
        cfg = get_config()
        dumped = cfg.model_dump(mode="json")
        text = yaml.safe_dump(dumped, sort_keys=False, allow_unicode=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        with self.cfg_lock:
            path = self.cfg_paths.get(digest)
            if path is None:
                os.makedirs(os.path.join(self.work, "config"), exist_ok=True)
                path = os.path.join(self.work, "config", f"{digest}.yaml")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
                self.cfg_paths[digest] = path
        return path

    # ------------------------------------------------------------- comparing

    def _run_job_safe(self, job: dict[str, Any]) -> None:
        try:
            run_and_compare(self, job)
        except BaseException as err:
            job["status"] = "harness_error"
            job.setdefault("causes", []).append(f"harness: compare failed: {type(err).__name__}: {err}")
            job["traceback"] = traceback.format_exc(limit=6)
        try:
            self.check_config(job)
        except Exception as err:
            job.setdefault("harness_errors", []).append(f"config check: {err!r}")
        if job.get("status") in ("equal", "refused", "not_translatable") and not self.keep_all and job.get("dir"):
            shutil.rmtree(job["dir"], ignore_errors=True)
            job["dir"] = None
        job.pop("vector", None)
        self._write(job)

    def _write(self, job: dict[str, Any]) -> None:
        line = json.dumps(job, sort_keys=True, default=repr)
        with self.lock:
            with open(self.records_path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def run_rs(self, argv: list[str], timeout: float = 120) -> tuple[int, str, str]:
        env = {"PATH": "/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8"}
        for _ in range(30):  # the binary may be replaced by a rebuild; wait for it
            if os.path.exists(self.bin):
                break
            time.sleep(2)
        try:
            proc = subprocess.run(
                [self.bin, *argv], capture_output=True, text=True, env=env, timeout=timeout
            )
        except FileNotFoundError:
            time.sleep(5)
            proc = subprocess.run(
                [self.bin, *argv], capture_output=True, text=True, env=env, timeout=timeout
            )
        return proc.returncode, proc.stdout, proc.stderr

    def check_config(self, job: dict[str, Any]) -> None:
        path = job.get("config")
        if not path:
            return
        with self.cfg_lock:
            if path in self.cfg_checks:
                job["config_check"] = os.path.basename(path)
                return
            self.cfg_checks[path] = {"pending": True}
        rc, out, err = self.run_rs(["config", "show", "--config", path])
        res = parse_config_show(path, rc, out, err)
        with self.cfg_lock:
            self.cfg_checks[path] = res
        job["config_check"] = os.path.basename(path)

    def finish(self) -> None:
        for fut in list(self.futures):
            try:
                fut.result()
            except Exception:
                pass
        self.pool.shutdown(wait=True)
        meta = {
            "meta": True,
            "bindings": self.bindings,
            "install_errors": self.install_errors,
            "config_checks": self.cfg_checks,
            "particles_file": getattr(sys.modules.get("particles"), "__file__", None),
            "particles_path": list(getattr(sys.modules.get("particles"), "__path__", []) or []),
        }
        self._write(meta)


# --------------------------------------------------------------------------- helpers


def _bind(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    import inspect

    sig = inspect.signature(getattr(func, "__wrapped__", func))
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        sig = inspect.signature(func)
        bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _describe_args(bound: dict[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in bound.items():
        if k == "session":
            out[k] = type(v).__name__
        else:
            text = repr(v)
            out[k] = text if len(text) < 400 else text[:400] + "..."
    return out


def _copy_db(c: sqlite3.Connection, path: str) -> str:
    """Copy the database ``c`` sees into ``path`` (on the connection's own thread)."""
    if os.path.exists(path):
        os.remove(path)
    if c.in_transaction:
        # sqlite3_backup_step returns SQLITE_LOCKED while the source connection
        # holds a write transaction (Python would retry forever); serialize()
        # reads the pages through the same pager, uncommitted ones included.
        data = bytearray(c.serialize())
        if len(data) >= 20:
            data[18] = data[19] = 1  # legacy (rollback-journal) file format
        with open(path, "wb") as fh:
            fh.write(data)
        how = "serialize (open transaction)"
    else:
        target = sqlite3.connect(path)
        try:
            c.backup(target)
        finally:
            target.close()
        how = "backup"
    check = sqlite3.connect(path)
    try:
        check.execute("PRAGMA journal_mode=DELETE")
    finally:
        check.close()
    return how


async def _snapshot_connection(conn: Any, path: str) -> str:
    raw = await conn.get_raw_connection()
    driver = getattr(raw, "driver_connection", None)
    aio = driver if hasattr(driver, "_execute") else getattr(raw.dbapi_connection, "_connection", None)
    if aio is None or not hasattr(aio, "_execute"):
        raise RuntimeError(f"not an aiosqlite connection: {type(driver).__name__}")
    sync_conn = aio._conn
    return await aio._execute(_copy_db, sync_conn, path)


async def _snapshot_session(session: Any, path: str, *, flush: bool) -> str:
    if flush and (session.new or session.dirty or session.deleted):
        await session.flush()
    conn = await session.connection()
    return await _snapshot_connection(conn, path)


def parse_config_show(path: str, rc: int, out: str, err: str) -> dict[str, Any]:
    import yaml

    res: dict[str, Any] = {"rc": rc, "ignored": [], "mismatched": [], "error": None}
    if rc != 0:
        res["error"] = (err or out).strip()[:2000]
        return res
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    in_ignored = False
    for line in out.splitlines():
        if line.startswith("ignored by the reference"):
            in_ignored = True
            continue
        if in_ignored:
            s = line.strip()
            if s:
                res["ignored"].append(s.split("  (")[0].strip())
            continue
        parts = [p for p in line.split("  ") if p.strip()]
        if len(parts) < 3 or not parts[-1].strip().startswith("file:"):
            continue
        key, value = parts[0].strip(), "  ".join(p.strip() for p in parts[1:-1])
        node: Any = data
        ok = True
        for seg in key.split("."):
            if isinstance(node, dict) and seg in node:
                node = node[seg]
            else:
                ok = False
                break
        if not ok:
            continue
        try:
            shown = json.loads(value)
        except Exception:
            shown = value
        if not _json_equal(shown, node):
            res["mismatched"].append({"key": key, "file": node, "shown": shown})
    return res


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


# --------------------------------------------------------------------------- translating


class NotTranslatable(Exception):
    pass


def _window_flags(window: dict[str, Any] | None) -> list[str]:
    """The CLI's --during/--on for a TimeWindow, where one says exactly the same."""
    if window is None:
        return []
    start, end = window.get("start"), window.get("end")

    def parse(v: str) -> _RealDatetime:
        d = _RealDatetime.fromisoformat(v.replace("Z", "+00:00"))
        return d if d.tzinfo else d.replace(tzinfo=timezone.utc)

    s = parse(start) if start else None
    e = parse(end) if end else None
    midnight = lambda d: (d.hour, d.minute, d.second, d.microsecond) == (0, 0, 0, 0)  # noqa: E731
    if s is not None and e is not None and s == e and midnight(s) and s.utcoffset().total_seconds() == 0:
        return ["--on=" + s.date().isoformat()]
    if e is not None and midnight(e.astimezone(timezone.utc)):
        # --during reads a midnight end as the end of that day
        raise NotTranslatable("window (its end is a midnight, which --during reads as the end of that day)")
    return [f"--during={s.isoformat() if s else ''}..{e.isoformat() if e else ''}"]


#: QueryRequest field -> how it becomes flags.
def _request_flags(req: dict[str, Any], fields_set: list[str], mode: str) -> tuple[list[str], list[str]]:
    flags: list[str] = []
    not_tr: list[str] = []
    defaults = {
        "question": None, "min_confidence": 0.0, "uncertainty_nature": None,
        "assertion_modality": None, "recency_window_days": None, "audience": "GENERAL",
        "top_k": 40, "subject_id": None, "tags": [], "include_ancestors": False,
        "include_document_meta": False, "include_non_asserted": False,
        "include_agreement": False, "include_contestedness": False, "as_of": None,
        "window": None, "observer_project": None, "grounded": None, "predicate": None,
        "object_eq": None, "object_gt": None, "object_lt": None, "object_contains": None,
        "count": False, "group_by": None, "min_effective_confidence": None,
        "list_predicates": False, "list_vocabulary": False,
    }
    for key, value in req.items():
        if key not in defaults:
            if value not in (None, False, [], {}, ""):
                not_tr.append(f"QueryRequest.{key}")
            continue
        if value == defaults[key] and not (isinstance(value, bool) != isinstance(defaults[key], bool)):
            continue
        if key == "question":
            continue  # positional, added by the caller
        if key == "min_confidence":
            flags.append(f"--min-confidence={repr(float(value))}")
        elif key == "uncertainty_nature":
            flags.append(f"--uncertainty-nature={str(value)}")
        elif key == "assertion_modality":
            flags.append(f"--assertion-modality={str(value)}")
        elif key == "recency_window_days":
            if value:  # 0 is "no window" on both sides
                flags.append(f"--recency-window-days={str(value)}")
        elif key == "audience":
            flags.append(f"--audience={str(value)}")
        elif key == "top_k":
            flags.append(f"--top-k={str(value)}")
        elif key == "subject_id":
            flags.append(f"--subject-id={str(value)}")
        elif key == "tags":
            for t in value:
                flags.append(f"--tag={str(t)}")
        elif key == "include_ancestors":
            flags.append("--include-ancestors")
        elif key == "include_document_meta":
            flags.append("--include-document-meta")
        elif key == "include_non_asserted":
            flags.append("--include-non-asserted")
        elif key == "include_agreement":
            if mode == "response":
                flags.append("--include-agreement")
        elif key == "include_contestedness":
            if mode == "response":
                flags.append("--contestedness")
        elif key == "as_of":
            flags.append(f"--as-of={str(value)}")
        elif key == "window":
            try:
                flags += _window_flags(value)
            except NotTranslatable as exc:
                not_tr.append(str(exc))
        elif key == "observer_project":
            flags.append(f"--observer-project={str(value)}")
        elif key == "grounded":
            if mode == "response":
                flags.append("--grounded" if value else "--ungrounded")
        elif key in ("predicate", "object_eq", "object_gt", "object_lt", "object_contains"):
            flags.append("--" + key.replace("_", "-") + "=" + str(value))
        elif key in ("count", "group_by", "min_effective_confidence", "list_predicates", "list_vocabulary"):
            if mode != "response":
                not_tr.append(f"QueryRequest.{key} on retrieve_ranked (a deterministic mode)")
                continue
            if key == "count":
                flags.append("--count")
            elif key == "group_by":
                flags.append(f"--group-by={str(value).lower()}")
            elif key == "min_effective_confidence":
                flags.append(f"--min-effective-confidence={repr(float(value))}")
            elif key == "list_predicates":
                flags.append("--predicates")
            elif key == "list_vocabulary":
                flags.append("--vocabulary")
    return flags, not_tr


def build_query_argv(job: dict[str, Any], calldir: str) -> list[str]:
    req = job["request"] or {}
    mode = "response" if job["kind"] == "query" else "hits"
    flags, not_tr = _request_flags(req, job.get("request_set", []), mode)
    if job["kind"] == "retrieve_ranked":
        w = job.get("code_symbol_rank_weight", 1.0)
        if w is not None and float(w) != 1.0:
            flags.append(f"--code-symbol-rank-weight={repr(float(w))}")
        if job.get("conflict_pairs"):
            # No caller of the reference 1.214.1 passes it; particles-rs does not take it.
            raise NotTranslatable("conflict_pairs (passed by no caller of the reference)")
        if job.get("apply_utility"):
            flags.append("--apply-utility")
        if job.get("apply_owner"):
            flags.append("--apply-owner")
        for tag in job.get("exclude_source_tags") or []:
            flags.append(f"--exclude-source-tag={str(tag)}")
    if not_tr:
        raise NotTranslatable("; ".join(not_tr))
    argv = ["query", "--config", job["config"], "--store", job["store"], "--no-sidecar"]
    if job.get("now"):
        argv += ["--now", job["now"]]
    question = req.get("question")
    use_vec = job.get("use_embeddings", True) and job.get("vector") is not None
    if question is not None or job["kind"] == "retrieve_ranked":
        if use_vec:
            vf = os.path.join(calldir, "vector.json")
            with open(vf, "w") as fh:
                json.dump(job["vector"], fh)
            argv += ["--vector-file", vf]
        elif not job.get("vector_captured") and question is not None and job.get("use_embeddings", True):
            raise NotTranslatable("query vector (not captured: the test replaced _gather_scored)")
        else:
            argv.append("--no-embedding")
    argv += ["--response-json"] if mode == "response" else ["--json"]
    argv += flags
    if question is not None:
        argv += ["--", question]
    return argv


def build_projection_argv(job: dict[str, Any]) -> list[str]:
    argv = ["memory-region", "--config", job["config"], "--store", job["store"], "--manifest", job["manifest"], "--json"]
    if job.get("base_dir") is None:
        argv.append("--remote")
    else:
        argv += ["--base-dir", job["base_dir"]]
    if job.get("observer_project") is not None:
        argv.append("--observer-project=" + str(job["observer_project"]))
    for tag in job.get("exclude_source_tags") or []:
        argv.append("--exclude-source-tag=" + str(tag))
    for uri in job.get("fold_targets") or []:
        argv.append("--fold-target=" + str(uri))
    if job.get("now"):
        argv += ["--now", job["now"]]
    return argv


def digest_config(job: dict[str, Any], calldir: str) -> str:
    import yaml

    with open(job["config"], encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    storage = data.setdefault("storage", {})
    if job.get("store") is None:
        path = os.path.join(calldir, "config.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(data, fh, sort_keys=False, allow_unicode=True)
        return path
    url = "sqlite+aiosqlite:///" + job["store"]
    if job["store_handle"] == "default":
        storage["database_url"] = url
    else:
        stores = storage.get("stores") or {}
        stores[job["store_handle"]] = url
        storage["stores"] = stores
    path = os.path.join(calldir, "config.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(data, fh, sort_keys=False, allow_unicode=True)
    return path


def classify_rs_failure(rc: int, err: str) -> tuple[str, str] | None:
    """(status, cause) for a particles-rs refusal, else None (a real error)."""
    text = err.strip()
    first = text.splitlines()[0] if text else f"exit {rc}"
    low = text.lower()
    if "unexpected argument" in low or "unrecognized subcommand" in low or "unrecognized argument" in low:
        import re

        m = re.search(r"(unexpected argument|unrecognized subcommand) '([^']+)'", text)
        what = m.group(2) if m else first
        return "refused", f"refused: particles-rs does not take {what!r}"
    if "the store's embeddings have" in low or "numbers; the store" in low:
        import re

        msg = re.sub(r"\d+", "N", first)
        return "refused", f"refused: {msg}"
    return None


def _norm_err(text: str) -> str:
    import re

    first = (text.strip().splitlines() or [""])[0]
    first = re.sub(r"/tmp/\S+", "<path>", first)
    first = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", first)
    return first[:200]


def run_and_compare(h: Harness, job: dict[str, Any]) -> None:
    calldir = job["dir"]
    kind = job["kind"]
    try:
        if kind in ("retrieve_ranked", "query"):
            argv = build_query_argv(job, calldir)
        elif kind == "projection":
            argv = build_projection_argv(job)
        else:
            # The digest names its store handle in its first line: answer under the
            # same handle, pointed at the copy, in a per-call configuration.
            argv = ["digest", "--config", digest_config(job, calldir), "--store", job["store_handle"], "--json"]
            if job.get("observer_project") is not None:
                argv.append("--project=" + str(job["observer_project"]))
            if job.get("now"):
                argv += ["--now", job["now"]]
    except NotTranslatable as exc:
        job["status"] = "not_translatable"
        job["causes"] = [f"not translatable: {exc}"]
        return
    job["argv"] = argv
    t0 = time.monotonic()
    rc, out, err = h.run_rs(argv)
    if kind.startswith("digest") and rc == 2 and "'--now'" in err and "unexpected argument" in err:
        # the digest verb without a clock flag: ask again, and say the clock is unpinned
        argv = [a for a in argv]
        i = argv.index("--now")
        del argv[i : i + 2]
        job["argv"] = argv
        job["notes"].append("digest: particles-rs takes no --now; its clock is not pinned")
        rc, out, err = h.run_rs(argv)
    job["rs_elapsed"] = round(time.monotonic() - t0, 3)
    job["rs_rc"] = rc
    if err.strip():
        job["rs_stderr"] = err.strip()[-1500:]
    ref_error = job.get("ref_error")
    if rc != 0:
        refusal = classify_rs_failure(rc, err)
        if ref_error is not None:
            job["status"] = "equal"
            job["causes"] = []
            job["notes"].append(f"both failed: reference {ref_error!r}; particles-rs {_norm_err(err)!r}")
            return
        if refusal is not None:
            job["status"], cause = refusal
            job["causes"] = [cause]
            return
        job["status"] = "differ"
        job["causes"] = [f"particles-rs failed where the reference answered: {_norm_err(err)}"]
        return
    if ref_error is not None:
        job["status"] = "differ"
        job["causes"] = [f"reference raised, particles-rs answered: {ref_error.split(':')[0]}"]
        return
    try:
        ours = json.loads(out)
    except Exception:
        job["status"] = "harness_error"
        job["causes"] = ["harness: particles-rs printed no JSON"]
        job["rs_stdout"] = out[:2000]
        return
    if kind == "retrieve_ranked":
        diffs = compare_hits(job["ref"], ours)
        if ours.get("not_applied"):
            job["notes"].append(f"particles-rs not_applied: {ours.get('not_applied')}")
    elif kind == "query":
        ref = job["ref"]
        excluded: list[str] = []
        gen = job.get("gen")
        if not job.get("gen_hooked"):
            excluded = list(ANSWER_FIELDS)
            job["notes"].append("answer fields not compared: the test replaced _generate_response")
        elif gen is not None and gen[0] == "returned" and ref.get("particles"):
            # (with no hits the composer returns its fixed sentence without a model)
            excluded = list(ANSWER_FIELDS)
            job["notes"].append("answer fields not compared: the answer came from the test's mocked LLM")
        elif gen is not None and gen[0] == "raised" and "ANTHROPIC_API_KEY" not in (gen[1] or ""):
            excluded = list(ANSWER_FIELDS)
            job["notes"].append(f"answer fields not compared: the test's LLM failed on purpose ({gen[1][:120]})")
        if excluded and ref.get("answer_refused") and ref.get("truncation_warning") is None:
            # the reference drops the truncation warning under a refusal, and this
            # refusal was the mocked model's
            excluded.append("truncation_warning")
            job["notes"].append("truncation_warning not compared: suppressed by the mocked model's refusal")
        job["answer_excluded"] = bool(excluded)
        ref_c = {k: v for k, v in ref.items() if k not in excluded}
        ours_c = {k: v for k, v in ours.items() if k not in excluded}
        diffs = compare_json(ref_c, ours_c, "")
    elif kind == "projection":
        ours = dict(ours)
        ours["fold_order"] = list((ours.get("fold_verdicts") or {}).keys())
        diffs = compare_json(job["ref"], ours, "")
    else:
        if kind == "digest":
            diffs = compare_json(job["ref"], {"markdown": ours.get("markdown")}, "")
        else:
            diffs = compare_json(job["ref"], ours, "")
    job["diffs"] = diffs[:40]
    job["diff_count"] = len(diffs)
    if diffs:
        job["status"] = "differ"
        causes = []
        for d in diffs:
            c = d["cause"]
            if c not in causes:
                causes.append(c)
        job["causes"] = causes
    else:
        job["status"] = "equal"
        job["causes"] = []
    if job.get("vector_dtype") not in (None, "float32"):
        job["notes"].append(f"query vector dtype {job['vector_dtype']} (written as JSON numbers)")
    job["ours_summary"] = _summary(ours)


def _summary(ours: Any) -> Any:
    if isinstance(ours, dict) and "hits" in ours:
        return [
            {"id": h.get("id"), "sim": _hex(h.get("similarity")), "eff": _hex(h.get("effective_confidence"))}
            for h in ours["hits"][:50]
        ]
    return None


def compare_hits(ref: list[dict[str, Any]], ours: dict[str, Any]) -> list[dict[str, Any]]:
    hits = ours.get("hits", [])
    diffs: list[dict[str, Any]] = []
    ref_ids = [r["id"] for r in ref]
    our_ids = [h.get("id") for h in hits]
    if ref_ids != our_ids:
        if sorted(ref_ids) == sorted(our_ids):
            cause = "hits: same ids, different order"
        elif len(ref_ids) != len(our_ids):
            cause = "hits: different number of hits"
        else:
            cause = "hits: different ids"
        diffs.append({"path": "hits[].id", "cause": cause, "ref": ref_ids[:50], "ours": our_ids[:50]})
        return diffs
    for i, (r, h) in enumerate(zip(ref, hits)):
        for field, ofield in (("sim", "similarity"), ("eff", "effective_confidence")):
            oh = _hex(h.get(ofield))
            if r[field] != oh:
                diffs.append(
                    {
                        "path": f"hits[{i}].{ofield}",
                        "cause": f"hits: {ofield} bits differ",
                        "ref": r[field],
                        "ours": oh,
                        "ref_value": float.fromhex(r[field]) if r[field] else None,
                        "ours_value": h.get(ofield),
                    }
                )
    return diffs


def _path_cause(path: str) -> str:
    import re

    return re.sub(r"\[\d+\]", "[]", path) or "(root)"


def compare_json(ref: Any, ours: Any, path: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(ref, dict) and isinstance(ours, dict):
        for k in ref.keys() | ours.keys():
            p = f"{path}.{k}" if path else k
            if k not in ours:
                out.append({"path": p, "cause": f"field {_path_cause(p)} missing from particles-rs", "ref": _short(ref[k])})
            elif k not in ref:
                out.append({"path": p, "cause": f"field {_path_cause(p)} only in particles-rs", "ours": _short(ours[k])})
            else:
                out.extend(compare_json(ref[k], ours[k], p))
        return out
    if isinstance(ref, list) and isinstance(ours, list):
        if len(ref) != len(ours):
            out.append({"path": path, "cause": f"{_path_cause(path)}: length differs", "ref": len(ref), "ours": len(ours)})
        for i, (a, b) in enumerate(zip(ref, ours)):
            out.extend(compare_json(a, b, f"{path}[{i}]"))
        return out
    if isinstance(ref, float) or isinstance(ours, float):
        if isinstance(ref, bool) or isinstance(ours, bool) or not isinstance(ref, (int, float)) or not isinstance(ours, (int, float)):
            out.append({"path": path, "cause": f"{_path_cause(path)} differs", "ref": _short(ref), "ours": _short(ours)})
        elif type(ref) is not type(ours):
            if float(ref) != float(ours):
                out.append({"path": path, "cause": f"{_path_cause(path)} differs", "ref": ref, "ours": ours})
            else:
                out.append({"path": path, "cause": f"{_path_cause(path)}: number printed as {type(ours).__name__}, reference {type(ref).__name__}", "ref": ref, "ours": ours})
        elif not (float(ref).hex() == float(ours).hex() or (math.isnan(ref) and math.isnan(ours))):
            out.append({"path": path, "cause": f"{_path_cause(path)} bits differ", "ref": float(ref).hex(), "ours": float(ours).hex(), "ref_value": ref, "ours_value": ours})
        return out
    if ref != ours or type(ref) is not type(ours):
        out.append({"path": path, "cause": f"{_path_cause(path)} differs", "ref": _short(ref), "ours": _short(ours)})
    return out


def _short(v: Any) -> Any:
    text = json.dumps(v, default=repr)
    return v if len(text) <= 600 else text[:600] + "..."


# --------------------------------------------------------------------------- pytest hooks

_HARNESS: Harness | None = None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    global _HARNESS
    try:
        _HARNESS = Harness()
        _HARNESS.install()
    except Exception:  # pragma: no cover - the run goes on without the harness
        sys.stderr.write("particles-rs harness failed to install:\n" + traceback.format_exc())
        _HARNESS = None


def pytest_collection_finish(session: pytest.Session) -> None:
    if _HARNESS is not None:
        try:
            _HARNESS.rebind(all_modules=True)
        except Exception:
            pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any):
    if _HARNESS is not None:
        _HARNESS.current_test = item.nodeid
        try:
            _HARNESS.rebind()
        except Exception:
            pass
    yield
    if _HARNESS is not None:
        _HARNESS.current_test = None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _HARNESS is not None:
        try:
            _HARNESS.finish()
        except Exception:
            sys.stderr.write("particles-rs harness failed to finish:\n" + traceback.format_exc())
