"""The reference's verdicts for the differential fuzz of our decoders.

Usage: python fuzz_oracle.py DECODER

One process serves one decoder for as long as its stdin stays open. Each line
on stdin is a batch: a JSON list of inputs. For each batch one line goes to
stdout: the JSON list of verdicts, in input order. Nothing else is written to
stdout (the reference's logging and Python's warnings go to stderr).

Decoders and their verdicts (each input is JSON; strings are Python str):

- embedding: the text of an `embedding_json` column ->
  {"ok": true, "bits": [u32 per float32]} from the reference's own
  `particle_store.decode_embedding` (`np.array(json.loads(t), dtype=float32)`),
  or {"ok": false, "error": name}. A result that is not one-dimensional (a
  scalar, a nested list) is refused as "ndim": it is not a vector.
- timestamp: a text -> {"ok": true, "iso": dt.isoformat()} from Python 3.11's
  `datetime.fromisoformat`, or {"ok": false, "error": name}.
- datetime: {"field": name, "value": JSON value} -> pydantic's
  `TypeAdapter(datetime).validate_python(value)` (the field is ours to place):
  {"ok": true, "iso": aware.isoformat(), "future": bool}, where `aware` is the
  value with a naive one read as UTC (what QueryRequest keeps) and `future`
  says whether it lies after the frozen clock (datetime.max in UTC), or
  {"ok": false, "errors": [...]} in FastAPI's shape (see `request`).
- netloc: a text -> {"ok": true, "netloc": urlsplit(t).netloc} or
  {"ok": false, "error": name} when urlsplit raises.
- regex: {"pattern": p, "haystacks": [h...]} -> {"compiles": bool,
  "matches": [true | false | null]} from `re.compile(p)` and `bool(search(h))`;
  null marks a search that ran past the time limit (catastrophic
  backtracking), which is not compared. A compile that raises something other
  than `re.error` is {"compiles": null, "error": name}: the reference would
  not skip that rule, it would fail.
- config: {"yaml": text, "env": {VAR: text}} -> the reference's own
  `validate_config()` on that file with that environment:
  {"verdict": "ok", "dump": ...}          the whole model_dump(), scalars tagged
  {"verdict": "invalid", "errors": [[loc, type], ...]}
  {"verdict": "yaml", "line": n|null}    safe_load refused the file (at that line)
  {"verdict": "env"}                      an override hit a non-mapping section
  {"verdict": "crash", "error": repr}     anything else
  Scalars are tagged so that JSON keeps Python's types: "i:<int>", "f:<repr>",
  "s:<text>"; booleans and None stay JSON.
- request: {"body": JSON value, "now": ISO instant} -> the reference's
  `QueryRequest.model_validate(body)` with the clock `_check_as_of` reads
  frozen at `now`: {"ok": true, "dump": model_dump(mode="json"), "bounds":
  {field: parse_bound's value}} (a number as {"number": "<digits>e<exp>"},
  exact, "0" for zero; an instant as {"instant": microseconds since the
  epoch}; null for neither) or {"ok": false, "errors": [...]}, the errors
  as FastAPI's 422 `detail` carries them (`type`, `loc`, `msg`, `input`, `ctx`
  through `jsonable_encoder`, so an exception in `ctx` becomes {}), with the
  locations relative to the body (FastAPI puts "body" first).
"""

import io
import json
import logging
import math
import os
import signal
import sys
import tempfile
import warnings
from datetime import UTC, datetime, timedelta
from decimal import Decimal

# Only verdicts go to the real stdout.
_OUT = sys.stdout
sys.stdout = sys.stderr
warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)


def _error_name(error):
    return type(error).__name__


# --- embedding ---------------------------------------------------------------


def embedding_oracle():
    import numpy as np

    from particles.store.particle_store import decode_embedding

    def verdict(text):
        try:
            array = decode_embedding(text)
        except Exception as error:  # noqa: BLE001 - every refusal is a verdict
            return {"ok": False, "error": _error_name(error)}
        if array.ndim != 1:
            return {"ok": False, "error": "ndim"}
        return {"ok": True, "bits": array.view(np.uint32).tolist()}

    return verdict


# --- timestamp ---------------------------------------------------------------


def timestamp_oracle():
    def verdict(text):
        try:
            value = datetime.fromisoformat(text)
        except Exception as error:  # noqa: BLE001
            return {"ok": False, "error": _error_name(error)}
        return {"ok": True, "iso": value.isoformat()}

    return verdict


# --- pydantic errors as FastAPI sends them -----------------------------------


def _jsonable(value):
    """fastapi.encoders.jsonable_encoder for what pydantic errors carry."""
    if isinstance(value, BaseException):
        # jsonable_encoder falls back to vars(obj): an exception has none.
        return {}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if hasattr(value, "value") and not isinstance(value, (str, int, float, bool)):
        return value.value
    return value


def _errors(error):
    out = []
    for item in error.errors(include_url=False):
        entry = {
            "type": item["type"],
            "loc": list(item["loc"]),
            "msg": item["msg"],
            "input": _jsonable(item["input"]),
        }
        if "ctx" in item:
            entry["ctx"] = _jsonable(item["ctx"])
        out.append(entry)
    return out


# --- datetime (pydantic) -----------------------------------------------------

_MAX_NOW = datetime.max.replace(tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def datetime_oracle():
    import pydantic

    adapter = pydantic.TypeAdapter(datetime)

    def verdict(case):
        try:
            parsed = adapter.validate_python(case["value"])
        except pydantic.ValidationError as error:
            return {"ok": False, "errors": _errors(error)}
        aware = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
        return {"ok": True, "iso": aware.isoformat(), "future": aware > _MAX_NOW}

    return verdict


# --- netloc ------------------------------------------------------------------


def netloc_oracle():
    from urllib.parse import urlsplit

    def verdict(text):
        try:
            return {"ok": True, "netloc": urlsplit(text).netloc}
        except Exception as error:  # noqa: BLE001
            return {"ok": False, "error": _error_name(error)}

    return verdict


# --- regex -------------------------------------------------------------------


class _SearchTimeout(Exception):
    pass


def _on_alarm(_signum, _frame):
    raise _SearchTimeout


def regex_oracle():
    import re

    signal.signal(signal.SIGALRM, _on_alarm)

    def timed(call):
        # _sre checks for signals as it backtracks, so the alarm interrupts a
        # catastrophic search; such a search is reported, never compared.
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        try:
            return call()
        except _SearchTimeout:
            return None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def verdict(case):
        try:
            compiled = timed(lambda: re.compile(case["pattern"]))
        except re.error:
            return {"compiles": False, "matches": []}
        except Exception as error:  # noqa: BLE001
            return {"compiles": None, "error": _error_name(error), "matches": []}
        if compiled is None:
            return {"compiles": None, "error": "timeout", "matches": []}
        # Compiled patterns are cached by re; a different pattern each time.
        matches = []
        for haystack in case["haystacks"]:
            found = timed(lambda: compiled.search(haystack) is not None)
            matches.append(found)
        return {"compiles": True, "matches": matches}

    return verdict


# --- config ------------------------------------------------------------------


def _tag(value):
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return f"i:{value}"
    if isinstance(value, float):
        return f"f:{value!r}"
    if isinstance(value, str):
        return f"s:{value}"
    if isinstance(value, (list, tuple)):
        return [_tag(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _tag(v) for k, v in value.items()}
    return f"?:{value!r}"


def _loc_text(loc):
    return ".".join(str(part) for part in loc)


def config_oracle():
    import pydantic
    import yaml

    from particles import config

    workdir = tempfile.mkdtemp()
    home = os.path.join(workdir, "home")
    os.makedirs(home)
    file = os.path.join(workdir, "config.yaml")
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in config.env_override_names() and not k.startswith("PARTICLES_")
    }

    def verdict(case):
        with io.open(file, "w", encoding="utf-8", newline="") as f:
            f.write(case["yaml"])
        os.environ.clear()
        os.environ.update(base)
        os.environ["HOME"] = home
        os.environ["PARTICLES_CONFIG"] = file
        os.environ.update(case["env"])
        try:
            _path, cfg = config.validate_config()
            return {"verdict": "ok", "dump": _tag(cfg.model_dump(mode="python"))}
        except pydantic.ValidationError as e:
            errors = [[_loc_text(err["loc"]), err["type"]] for err in e.errors()]
            return {"verdict": "invalid", "errors": errors}
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            return {"verdict": "yaml", "line": mark.line + 1 if mark else None}
        except (yaml.YAMLError, ValueError, KeyError, OverflowError):
            return {"verdict": "yaml", "line": None}
        except (TypeError, AttributeError):
            return {"verdict": "env"}
        except Exception as e:  # noqa: BLE001 - reported, compared, never hidden
            return {"verdict": "crash", "error": repr(e)}

    return verdict


# --- request -----------------------------------------------------------------


class _FrozenClock(datetime):
    frozen: datetime = datetime.now(UTC)

    @classmethod
    def now(cls, tz=None):  # noqa: D102 - mirrors datetime.now
        value = cls.frozen
        return value if tz is None else value.astimezone(tz)


def _bound(value):
    from particles.core.claims import parse_bound

    parsed = parse_bound(value)
    if parsed is None:
        return None
    if isinstance(parsed, Decimal):
        # The exact value (no context rounding): sign, significant digits and
        # the exponent of the last one; zero has no sign.
        sign, digits, exponent = parsed.as_tuple()
        text = "".join(map(str, digits)).lstrip("0")
        if not text:
            return {"number": "0"}
        stripped = text.rstrip("0")
        exponent += len(text) - len(stripped)
        return {"number": f"{'-' if sign else ''}{stripped}e{exponent}"}
    aware = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    # Microseconds since the epoch: no conversion that could leave years 1..9999.
    return {"instant": (aware - _EPOCH) // timedelta(microseconds=1)}


def request_oracle():
    import pydantic

    import particles.core.schema as schema

    # `_check_as_of` reads datetime.now(UTC); both engines judge the future
    # against the same frozen instant.
    schema.datetime = _FrozenClock

    def verdict(case):
        now = datetime.fromisoformat(case["now"])
        _FrozenClock.frozen = now if now.tzinfo else now.replace(tzinfo=UTC)
        try:
            request = schema.QueryRequest.model_validate(case["body"])
        except pydantic.ValidationError as error:
            return {"ok": False, "errors": _errors(error)}
        bounds = {
            name: _bound(getattr(request, name))
            for name in ("object_eq", "object_gt", "object_lt")
            if getattr(request, name) is not None
        }
        return {"ok": True, "dump": request.model_dump(mode="json"), "bounds": bounds}

    return verdict


ORACLES = {
    "embedding": embedding_oracle,
    "timestamp": timestamp_oracle,
    "datetime": datetime_oracle,
    "netloc": netloc_oracle,
    "regex": regex_oracle,
    "config": config_oracle,
    "request": request_oracle,
}


def main():
    verdict = ORACLES[sys.argv[1]]()
    for line in sys.stdin:
        inputs = json.loads(line)
        verdicts = [verdict(item) for item in inputs]
        _OUT.write(json.dumps(verdicts, ensure_ascii=True, allow_nan=False))
        _OUT.write("\n")
        _OUT.flush()


if __name__ == "__main__":
    main()
