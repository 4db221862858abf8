"""``python -m bench.cold_start``: what bytecode saves a cold start, measured on this machine.

Each function's handler module is imported by a fresh ``python -I -S -B`` (no site-packages,
no bytecode written: Lambda's ``/opt`` and ``/var/task`` are read-only) with only a code
directory and a dependency layer on ``sys.path``, as in Lambda, twice over:

* **source only**: the package as the stack ships it (``--no-compile``, no ``__pycache__``), so
  every imported module is compiled at import, as on every cold start in Lambda;
* **with bytecode**: the package as the stack ships it with ``sundial:bytecodePython`` set (here
  to this interpreter, standing in for the runtime's), so every import reads a ``.pyc``.

The code is the stack's code directory (``infra.bundling.build_code``) and the layer is built by
the stack's recipe for this machine's Python and CPU (``build_dependencies``: the shipped one is
for Lambda's Python and CPU and cannot run here), both copied into a temporary directory, with
the files' times set to CDK's zip's (1980), as Lambda unpacks them; the bytecode builds go to
that directory too, so the .build/ cache stays as it was (the first run downloads the wheels
again, from pip's cache). It prints, per handler, the median (and min-max) wall time of
``--runs`` fresh processes that import it, the interpreter's own start subtracted, and the
number of modules and source bytes it imports. docs/deploy.md ("Bytecode and cold starts") has
the figures and what was decided.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from infra import bundling

HANDLERS = {
    "api": "functions.api.handler",
    "authorizer": "functions.authorizer.handler",
    "tick": "functions.tick.handler",
    "scanner": "functions.scanner.handler",
    "trigger": "functions.trigger.handler",
    "jobs": "functions.jobs.handler",
}
"""trigger_high's module only re-exports the trigger's."""

ZIP_TIME = 315_532_800
"""1980-01-01: the time CDK gives every file of an asset's zip."""

IMPORT = """
import sys
sys.path[:0] = [{code!r}, {site!r}]
import {module}
"""

COUNT = """
import sys
sys.path[:0] = [{code!r}, {site!r}]
before = set(sys.modules)
import {module}
import os
new = [m for name, m in sys.modules.items() if name not in before and getattr(m, "__file__", None)]
print(len(new), sum(os.path.getsize(m.__file__) for m in new if m.__file__.endswith(".py")))
"""


def _timed(python: str, script: str) -> float:
    started = time.perf_counter()
    subprocess.run([python, "-I", "-S", "-B", "-c", script], check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per handler and case (7)")
    args = parser.parse_args(argv)
    python = sys.executable
    version = bundling.host_python()
    with tempfile.TemporaryDirectory(prefix="sundial-cold-start-") as scratch:
        compiler = bundling.bytecode_compiler(python, version)
        built = {
            "source": (
                bundling.build_code().path,
                bundling.build_dependencies(architecture=bundling.host_architecture(), python=version).path,
            ),
            "bytecode": (
                bundling.build_code(compiler=compiler, build_dir=Path(scratch)).path,
                bundling.build_dependencies(
                    architecture=bundling.host_architecture(),
                    python=version,
                    compiler=compiler,
                    build_dir=Path(scratch),
                ).path,
            ),
        }
        copies = {}
        for case, (code, layer) in built.items():
            root = Path(scratch) / case
            stray = shutil.ignore_patterns("__pycache__") if case == "source" else None  # as shipped
            shutil.copytree(code, root / "code", ignore=stray)
            shutil.copytree(layer / "python", root / "python", ignore=stray)
            for path in root.rglob("*"):
                os.utime(path, (ZIP_TIME, ZIP_TIME))
            copies[case] = root
        bare = statistics.median(_timed(python, "pass") for _ in range(args.runs))
        print(f"python {sys.version.split()[0]} ({python}); interpreter start {bare * 1000:.0f} ms (subtracted)")
        print(f"{'handler':<11} {'modules':>7} {'source KB':>9} {'source only':>17} {'with bytecode':>17} {'saved':>6}")
        for name, module in HANDLERS.items():
            scripts = {
                case: IMPORT.format(code=str(root / "code"), site=str(root / "python"), module=module)
                for case, root in copies.items()
            }
            counted = COUNT.format(
                code=str(copies["source"] / "code"), site=str(copies["source"] / "python"), module=module
            )
            modules, size = subprocess.run(
                [python, "-I", "-S", "-B", "-c", counted], check=True, capture_output=True, text=True
            ).stdout.split()
            times: dict[str, list[float]] = {case: [] for case in scripts}
            for _ in range(args.runs):  # interleaved: a load change hits both cases alike
                for case, script in scripts.items():
                    times[case].append((_timed(python, script) - bare) * 1000)
            source, compiled = (statistics.median(times[case]) for case in ("source", "bytecode"))
            spread = {case: f"{min(values):.0f}-{max(values):.0f}" for case, values in times.items()}
            print(
                f"{name:<11} {modules:>7} {int(size) // 1024:>9} {source:>6.0f} ms ({spread['source']:>7})"
                f" {compiled:>6.0f} ms ({spread['bytecode']:>7}) {source - compiled:>4.0f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
