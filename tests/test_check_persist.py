"""A learner file that tries to leave something behind that acts after its check: a forged record in the recorded
results and in ./hgemm-results/, a .pth and a sitecustomize in site-packages, a forged bytecode file of the
checker's own reference, a Numba cache index of a simulator, a file in IPython's startup folder and in ~/.cache,
and a process that double-forks out of its session to write all of them again once the check is over.

Where Landlock is on, every write is refused; where the kernel lacks it (simulated here for a function checked in a
fork), the watch fails the check and moves all of it away once the check's processes have ended.
Either way, afterwards: a wrong answer fails, ``hgemm-course results`` lists no forged record, the background
process is gone and nothing it planted is left.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hgemm_course.check import check, confine, watch
from hgemm_course.library.paths import PACKAGE_DIR, results_dir

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "solutions" / "ex05_swizzle.py").read_text()
WRONG_128B = "def swizzle_128b(row, chunk):\n    return chunk\n"
MARK = "forged_by_a_learner"
REFERENCE = PACKAGE_DIR / "check" / "ex05_swizzle.py"


def _site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_path("purelib"))


def _targets(cwd: Path) -> dict[str, Path]:
    """What the attack plants, by kind."""
    tag = f"{MARK}_{os.getpid()}"
    pyc = Path(importlib.util.cache_from_source(str(REFERENCE)))
    return {"record": results_dir() / f"bench_nvidia-h200_20261204T000000_{tag}.json",
            "own record": cwd / "hgemm-results" / f"bench_nvidia-h200_20261204T000001_{tag}.json",
            "pth": _site_packages() / f"zz_{tag}.pth",
            "sitecustomize": _site_packages() / "sitecustomize.py",
            "bytecode": pyc,
            "numba": PACKAGE_DIR / "sim" / "__pycache__" / f"{tag}-1.py311.nbi",
            "ipython": Path.home() / ".ipython" / "profile_default" / "startup" / f"zz_{tag}.py",
            "home cache": Path.home() / ".cache" / f"{tag}.txt"}


def _forged_record() -> str:
    """The newest recorded bench run, renamed and at 142.7% of cuBLAS: what ``results`` would list."""
    newest = sorted(results_dir().glob("bench_*.json"))[-1]
    data = json.loads(newest.read_text())
    for record in data["records"]:
        record["pct_cublas"] = 142.7
    return json.dumps(data)


def _attack(targets: dict[str, Path], pid_file: Path, log: Path) -> str:
    """Python source that plants every target now and, from a double-forked process in a session of its own,
    again 1.5 s later; each refusal is logged. The bytecode file is a valid one for the reference's source (its
    size and time) whose reference answers ``chunk``: loaded by a later check, a wrong answer would pass."""
    forged_reference = REFERENCE.read_text().replace("def _reference(row: int, chunk: int) -> int:",
                                                     "def _reference(row: int, chunk: int) -> int:\n    return chunk", 1)
    assert forged_reference != REFERENCE.read_text()
    forged_reference += f"\n_FORGED = {MARK!r}\n"        # to tell the forged bytecode file from Python's own
    contents = {name: "# planted\n" for name in targets}
    contents["record"] = contents["own record"] = _forged_record()
    contents["sitecustomize"] = "pass\n"
    return f"""
import importlib._bootstrap_external as _ext, os as _os, time as _time
_st = _os.stat({str(REFERENCE)!r})
_code = compile({forged_reference!r}, {str(REFERENCE)!r}, "exec")
_pyc = bytes(_ext._code_to_timestamp_pyc(_code, int(_st.st_mtime), _st.st_size))
_plants = {{path: text.encode() for path, text in {dict((str(p), contents[n]) for n, p in targets.items())!r}.items()}}
_plants[{str(targets["bytecode"])!r}] = _pyc

def _plant(when):
    for path, data in _plants.items():
        try:
            _os.makedirs(_os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        except OSError as exc:
            open({str(log)!r}, "a").write(f"{{when}} refused {{path}} {{exc.errno}}\\n")

_plant("now")
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        open({str(pid_file)!r}, "w").write(str(_os.getpid()))
        _time.sleep(1.5)
        _plant("later")
        open({str(log)!r}, "a").write("later done\\n")
    _os._exit(0)
_until = _time.monotonic() + 5
while not _os.path.exists({str(pid_file)!r}) and _time.monotonic() < _until:
    _time.sleep(0.02)
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hgemm_course.course.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def _afterwards(targets: dict[str, Path], pid_file: Path, log: Path, cwd: Path, watched_home: bool) -> None:
    """What must hold once the check is over: nothing of the attack acts, runs or is listed."""
    deadline = time.monotonic() + 10
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    time.sleep(2.0)                                  # past the background process's 1.5 s
    assert not _running(pid)
    assert "later" not in (log.read_text() if log.exists() else "")
    kept = [name for name, path in targets.items() if path.exists()
            and (name != "bytecode" or MARK.encode() in path.read_bytes())]
    if not watched_home:                             # without Landlock the home folder is not watched
        kept = [name for name in kept if name != "home cache"]
    assert kept == [], kept
    wrong = cwd / "wrong.py"
    wrong.write_text(WRONG_128B)
    out = _cli("check", "ex05", "--path", str(wrong), cwd=cwd)
    assert out.returncode == 1 and "expected 1, got 0" in out.stdout, out.stdout + out.stderr
    for listing in (_cli("results", "--json", cwd=cwd), _cli("results", "--dir", "hgemm-results", "--json", cwd=cwd)):
        assert MARK not in listing.stdout + listing.stderr and "Traceback" not in listing.stderr


@pytest.fixture
def planted(tmp_path):
    """The targets, and the check's folder; whatever is left of them is removed after the test."""
    targets = _targets(tmp_path)
    pyc = targets["bytecode"]
    original = pyc.read_bytes() if pyc.exists() else None
    had_sitecustomize = targets["sitecustomize"].exists()
    assert not had_sitecustomize, "a sitecustomize.py is installed already: this test would replace it"
    yield targets
    for name, path in targets.items():
        if name != "bytecode":
            path.unlink(missing_ok=True)
    if pyc.exists() and MARK.encode() in pyc.read_bytes():
        pyc.unlink()
        if original is not None:
            pyc.write_bytes(original)


def test_a_forged_record_would_be_listed(tmp_path):
    """The attack's record is one ``results`` lists: the tests below are not vacuous."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / f"bench_nvidia-h200_20261204T000000_{MARK}.json").write_text(_forged_record())
    out = _cli("results", "--dir", "runs", "--json", cwd=tmp_path)
    assert out.returncode == 0 and MARK in out.stdout, out.stdout + out.stderr


def test_a_file_that_plants_what_would_outlive_its_check_leaves_nothing(tmp_path, planted, monkeypatch):
    """The learner's file, checked from the command line with the protections this machine has."""
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "learner"                        # a folder of its own, which its code may write
    own.mkdir()
    pid_file, log = own / "pid", own / "log"
    path = own / "mine.py"
    path.write_text(_attack(planted, pid_file, log) + "\n\n" + SOLUTION)
    out = _cli("check", "ex05", "--path", str(path), cwd=tmp_path)
    assert out.returncode in (0, 1) and "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr
    if watch.landlock():                              # every write refused: the right answer passes
        assert out.returncode == 0, out.stdout
        refused = log.read_text()
        assert all(f"now refused {p}" in refused for p in planted.values()), refused
    else:                                             # the watch fails it and moves what it planted away
        assert out.returncode == 1 and "were moved to" in out.stdout, out.stdout
    _afterwards(planted, pid_file, log, tmp_path, watched_home=watch.landlock())


def test_without_landlock_what_a_check_planted_is_moved_away(tmp_path, planted, monkeypatch):
    """As on a kernel without Landlock: a function checked in a fork plants all of it; the check fails naming the
    files, and once its processes have ended moves them to a folder of its own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    watch.landlock.cache_clear()
    pid_file, log = tmp_path / "pid", tmp_path / "log"
    attack = _attack(planted, pid_file, log)
    done = []

    def swizzle_128b(row, chunk):
        if not done:
            done.append(1)
            exec(attack, {})
        return chunk ^ (row % 8)

    try:
        result = check("ex05", swizzle_128b)
    finally:
        watch.landlock.cache_clear()
    assert result.verdict == "FAIL" and "the course's own files or its results changed" in result.message, str(result)
    moved = Path(result.message.split("were moved to ", 1)[1].split(",", 1)[0])
    assert moved.is_dir() and (moved / str(planted["record"]).lstrip("/")).is_file(), result.message
    assert not log.exists() or "now refused" not in log.read_text()     # nothing refused: Landlock was off
    _afterwards(planted, pid_file, log, tmp_path, watched_home=False)
