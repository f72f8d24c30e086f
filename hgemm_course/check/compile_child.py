"""Compile a learner's ``.cu`` with NVRTC in a child process, the compile of a kernel exercise's CPU part:

    python -P hgemm_course/check/compile_child.py REQUEST OUT

``REQUEST`` is JSON ``{"path", "names", "arch"}`` (the file, the name expressions to instantiate, the
architecture); the child writes to the file ``OUT`` one JSON object: ``{"ptx", "lowered", "resources"}``
(the PTX, each name expression's mangled name, ptxas's report per kernel) or ``{"compile_error": LOG}``
or ``{"refused": TEXT}``. A learner's source can ask the compiler for anything (a macro that expands
without end, an #include of a device file), so the compile runs here, under the check's time and memory
limits (:mod:`.sandbox`), and never in the caller's process; :func:`.kernel_compile.compile_learner`
starts it and reads the answer. It runs as a script, so that starting it imports the compiler's
modules and not the checkers'.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from hgemm_course.library.build import CompileError, compile_cuda

    request, out = json.loads(argv[0]), Path(argv[1])
    try:
        module = compile_cuda(Path(request["path"]), name_expressions=tuple(request["names"]), arch=request["arch"])
        answer = {"ptx": module.ptx, "lowered": module.lowered,
                  "resources": {name: dataclasses.asdict(r) for name, r in module.resources.items()}}
    except CompileError as exc:
        answer = {"compile_error": exc.log}
    except RuntimeError as exc:    # an instantiation the file no longer defines, NVRTC missing, ...
        answer = {"refused": str(exc)}
    out.write_text(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
