"""Many processes at once: every run written is found whole, every cubin loaded is complete.

Each test starts WORKERS processes that wait for the same instant, then write and read the same
folder. Against the old writers (straight to the final name, runs named to the second) these tests
found 2 of 80 runs kept, 6 half-written run files read, and 11 of 160 loads of a partial cubin.
"""
import json
import subprocess
import sys
import textwrap
import time

WORKERS = 8

WRITE_RUNS = textwrap.dedent("""
    import sys, time, warnings
    from hgemm_course.measurement.records import load_runs, write_run

    folder, start, writes = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    record = {"rung": "05", "M": 4096, "N": 4096, "K": 4096, "tflops": 1.0, "cublas_tflops": 2.0,
              "pct_cublas": 50.0, "samples_ms": [0.125] * 5000}        # a large file: a long window to tear
    time.sleep(max(0.0, start - time.time()))
    torn = 0
    for _ in range(writes):
        write_run([record], folder=folder)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            load_runs(folder)
        torn += len(caught)
    print(torn)
""")

LOAD_CUBINS = textwrap.dedent("""
    import hashlib, sys, time, types
    from pathlib import Path
    from hgemm_course.library import build

    class LoadedCubin:                      # stands in for cupy.RawModule: reads the file as the driver would
        def __init__(self, path):
            self.cubin = Path(path).read_bytes()

        def get_function(self, name):
            return self

    def fake_nvrtc(text, name, name_expressions, arch, options, include_dirs):
        time.sleep(0.005)                   # compiling takes a while, so the processes finish it together
        cubin = hashlib.sha256(text.encode()).digest() * (1 << 15)      # 1 MiB, the same in every process
        return build.CompiledModule(name, arch, "", cubin, "")

    sys.modules["cupy"] = types.SimpleNamespace(RawModule=LoadedCubin)
    build._nvrtc_compile = fake_nvrtc
    build.CUBIN_CACHE_DIR = Path(sys.argv[1])
    start, rounds = float(sys.argv[2]), int(sys.argv[3])
    time.sleep(max(0.0, start - time.time()))
    partial = 0
    for r in range(rounds):
        module = build.compile_cuda(f"// round {r}\\n__global__ void k() {{}}\\n")
        partial += module.function("k").cubin != module.cubin
    print(partial)
""")


def _run_together(script: str, folder, count: int) -> list[int]:
    """WORKERS processes run the script on one folder, starting together 2 s from now; each prints one number."""
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", script, str(folder), str(start), str(count)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(WORKERS)]
    counts = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        counts.append(int(out))
    return counts


def test_runs_written_at_once_are_all_kept_and_whole(tmp_path):
    writes = 10
    torn = _run_together(WRITE_RUNS, tmp_path, writes)
    files = sorted(tmp_path.glob("bench_*.json"))
    assert len(files) == WORKERS * writes, "two runs got the same name"
    for path in files:
        assert len(json.loads(path.read_text())["records"][0]["samples_ms"]) == 5000
    assert sum(torn) == 0, f"readers saw {sum(torn)} half-written run files"
    assert not list(tmp_path.glob(".*")), "a temporary file was left behind"


def test_cubins_loaded_at_once_are_all_complete(tmp_path):
    rounds = 20
    partial = _run_together(LOAD_CUBINS, tmp_path / "cubins", rounds)
    assert sum(partial) == 0, f"{sum(partial)} of {WORKERS * rounds} loads read a partial cubin"
    assert len(list((tmp_path / "cubins").glob("*.cubin"))) == rounds
