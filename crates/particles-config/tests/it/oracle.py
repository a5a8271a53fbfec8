"""The reference's verdict on config files, for the differential test.

Usage: python oracle.py MANIFEST OUT

MANIFEST is a JSON list of cases, each `{"file": path, "env": {VAR: text}}`. For
each case the process environment is reset (every override variable and every
PARTICLES_* removed, HOME pointed at an empty directory), PARTICLES_CONFIG is
set to the file and the case's variables are added; then the reference's own
`validate_config()` (which never touches the cached singleton) loads it.

OUT receives one JSON verdict per case:
  {"verdict": "ok", "dump": ...}          the whole model_dump(), scalars tagged
  {"verdict": "invalid", "errors": [[loc, type], ...]}
  {"verdict": "yaml", "line": n|null}    safe_load refused the file (at that line)
  {"verdict": "env"}                      an override hit a non-mapping section
  {"verdict": "crash", "error": repr}     anything else
Scalars are tagged so that JSON keeps Python's types: "i:<int>", "f:<repr>",
"s:<text>"; booleans and None stay JSON.
"""

import json
import logging
import os
import sys
import tempfile

import pydantic
import yaml

from particles import config


def tag(value):
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return f"i:{value}"
    if isinstance(value, float):
        return f"f:{value!r}"
    if isinstance(value, str):
        return f"s:{value}"
    if isinstance(value, (list, tuple)):
        return [tag(v) for v in value]
    if isinstance(value, dict):
        return {str(k): tag(v) for k, v in value.items()}
    return f"?:{value!r}"


def loc_text(loc):
    return ".".join(str(part) for part in loc)


def main():
    # The reference logs deprecations and resolution notes; they are not verdicts.
    logging.disable(logging.CRITICAL)
    manifest, out = sys.argv[1], sys.argv[2]
    with open(manifest) as f:
        cases = json.load(f)
    home = tempfile.mkdtemp()
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in config.env_override_names() and not k.startswith("PARTICLES_")
    }
    verdicts = []
    for case in cases:
        os.environ.clear()
        os.environ.update(base)
        os.environ["HOME"] = home
        os.environ["PARTICLES_CONFIG"] = case["file"]
        os.environ.update(case["env"])
        try:
            _path, cfg = config.validate_config()
            verdicts.append({"verdict": "ok", "dump": tag(cfg.model_dump(mode="python"))})
        except pydantic.ValidationError as e:
            errors = [[loc_text(err["loc"]), err["type"]] for err in e.errors()]
            verdicts.append({"verdict": "invalid", "errors": errors})
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            verdicts.append({"verdict": "yaml", "line": mark.line + 1 if mark else None})
        except (yaml.YAMLError, ValueError, KeyError, OverflowError):
            verdicts.append({"verdict": "yaml", "line": None})
        except (TypeError, AttributeError):
            verdicts.append({"verdict": "env"})
        except Exception as e:  # noqa: BLE001 - reported, compared, never hidden
            verdicts.append({"verdict": "crash", "error": repr(e)})
    with open(out, "w") as f:
        json.dump(verdicts, f)


if __name__ == "__main__":
    main()
