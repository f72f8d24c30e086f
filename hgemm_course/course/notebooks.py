"""Execute every chapter and appendix notebook in place of a reader, keeping its outputs (run on the H200).

    python3 -m hgemm_course.course.notebooks --out DIR [chapters/03_*.ipynb ...]

Each executed copy goes to DIR with the same name; a cell that raises stops that
notebook and the exit status says so. What a chapter measures is recorded in the course's results/
(:data:`hgemm_course.course.here_or_recorded.RECORD_ENV`), so that every figure the site publishes as measured has its
run file; on a machine that cannot record (not an H200, provenance incomplete) such a cell stops.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from .book_site import appendices, chapters
from .here_or_recorded import RECORD_ENV


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("notebooks", nargs="*", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = p.parse_args()
    root = Path(__file__).resolve().parents[2]
    paths = args.notebooks or chapters(root) + appendices(root)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ[RECORD_ENV] = "1"            # the kernels inherit it: measured cells write to results/
    failed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        start = time.time()
        try:
            NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
            verdict = "ok"
        except CellExecutionError as exc:
            failed.append(path.name)
            verdict = f"FAILED: {str(exc).splitlines()[-1] if str(exc) else exc!r}"
        nbformat.write(nb, args.out / path.name)
        print(f"{path.name}: {verdict} ({time.time() - start:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
