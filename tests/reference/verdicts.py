"""The reference CLI's verdict on `particles query` runs, in-process.

    verdicts.py < cases.json

Reads a JSON list of {"config": PATH, "args": [...]} and prints a JSON list of
{"exit": CODE, "error": "<exception type>: <message>" | null, "stderr": TEXT}: the
exit code `particles query` would end with (1 for an exception it does not catch, as
the process would with a traceback). Each case runs with PARTICLES_CONFIG naming its
file, HOME an empty directory and `reset_config()` first (config-and-stores §7.6);
the encoder is stubbed out and the answer step never leaves the machine.
"""

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import configured  # noqa: E402


def main() -> None:
    cases = json.load(sys.stdin)
    configured.isolate_environment(tempfile.mkdtemp(prefix="particles-home-"))
    import particles.operations.query.main as query_main
    from particles.api.cli import app

    query_main._embed = lambda _text: None
    verdicts = []
    for case in cases:
        configured.use_config(Path(case["config"]))
        stderr = io.StringIO()
        error = None
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            try:
                app(case["args"], prog_name="particles")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception as exc:  # the process would print a traceback and exit 1
                code = 1
                error = f"{type(exc).__name__}: {exc}"
        verdicts.append({"exit": code, "error": error, "stderr": stderr.getvalue()[-2000:]})
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
