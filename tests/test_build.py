import os

import pytest

from hgemm_course.library import build
from hgemm_course.library.build import CompileError, compile_cuda, parse_diagnostics, parse_ptxas_report

SOURCE = """\
#include <cuda_fp16.h>
template <int N>
__global__ void reverse(const half* a, half* c) {
  __shared__ half staged[N];                       // (N,) halves
  staged[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  c[threadIdx.x] = staged[N - 1 - threadIdx.x];
}
"""


def test_compiles_for_sm90a_without_a_gpu():
    module = compile_cuda(SOURCE, name_expressions=["reverse<256>"])
    assert ".target sm_90a" in module.ptx
    assert module.cubin[:4] == b"\x7fELF"
    res = module.resources_of("reverse<256>")
    assert res.smem_static == 256 * 2
    assert 0 < res.registers <= 32
    assert res.spills == 0


def test_each_instantiation_gets_its_own_report():
    module = compile_cuda(SOURCE, name_expressions=["reverse<128>", "reverse<512>"])
    assert module.resources_of("reverse<128>").smem_static == 256
    assert module.resources_of("reverse<512>").smem_static == 1024
    with pytest.raises(KeyError, match="not a kernel"):
        module.resources_of("reverse<64>")


def test_compile_error_names_file_and_line():
    broken = SOURCE.replace("staged[N - 1 - threadIdx.x]", "staged[N - 1 - lane]")
    with pytest.raises(CompileError) as info:
        compile_cuda(broken, name_expressions=["reverse<32>"])
    err = info.value
    assert err.errors[0]["line"] == 7
    assert 'identifier "lane" is undefined' in err.errors[0]["message"]
    assert ":7:" in str(err).splitlines()[0]


def test_snippet_headers_are_on_the_include_path(tmp_path):
    # ptx_snippets/ and hgemm_course/library/kernels/ are found without any -I from the caller
    from hgemm_course.library.paths import PTX_SNIPPETS_DIR

    headers = sorted(PTX_SNIPPETS_DIR.glob("*.cuh"))
    if not headers:
        pytest.skip("no snippet headers yet")
    src = "".join(f'#include "{h.name}"\n' for h in headers) + "__global__ void empty() {}\n"
    module = compile_cuda(src, name_expressions=["empty"])
    assert module.resources_of("empty").registers >= 0


def test_ptxas_report_parser_reads_spills_and_stack():
    log = """ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'
ptxas info    : Function properties for _Z3fooPf
    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
"""
    res = parse_ptxas_report(log)["_Z3fooPf"]
    assert (res.registers, res.smem_static, res.stack_frame, res.spill_stores, res.spill_loads, res.barriers) == \
        (255, 4096, 48, 40, 36, 1)
    assert res.spills == 76


def test_diagnostics_sort_errors_before_warnings():
    log = 'k.cu(3): warning #177-D: variable "x" was declared but never referenced\nk.cu(9): error: expected a ";"\n'
    diags = parse_diagnostics(log)
    assert [d["kind"] for d in diags] == ["error", "warning"]
    assert diags[0]["line"] == 9


# ------------------------------------------------------------------ the caches

def test_an_edited_header_beside_a_learners_source_is_compiled_again(tmp_path):
    # the header is two includes deep: the .cu includes tile.cuh, which includes size.cuh
    (tmp_path / "tile.cuh").write_text('#include "size.cuh"\n')
    (tmp_path / "size.cuh").write_text("constexpr int N = 128;\n")
    source = tmp_path / "mine.cu"
    source.write_text('#include "tile.cuh"\n' + SOURCE.replace("template <int N>\n", ""))
    assert compile_cuda(source, name_expressions=["reverse"]).resources_of("reverse").smem_static == 256
    (tmp_path / "size.cuh").write_text("constexpr int N = 512;\n")
    assert compile_cuda(source, name_expressions=["reverse"]).resources_of("reverse").smem_static == 1024


@pytest.fixture
def cubin_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "CUBIN_CACHE_DIR", tmp_path / "cubins")
    monkeypatch.setattr(build, "_private_cubin_dir", None)
    return tmp_path / "cubins"


def test_a_cut_short_or_damaged_cubin_is_written_again(cubin_cache):
    cubin = bytes(range(256)) * 64
    path = build.cubin_file(cubin)
    assert path.parent == cubin_cache and path.read_bytes() == cubin
    for damage in (cubin[:1000], cubin[:-1] + b"\0"):
        path.write_bytes(damage)
        assert build.cubin_file(cubin) == path and path.read_bytes() == cubin


def _fall_back_once(cubin_cache):
    with pytest.warns(UserWarning, match=f"cannot write the cubin cache {cubin_cache}") as caught:
        first, second = build.cubin_file(b"first cubin"), build.cubin_file(b"second cubin")
    assert len(caught) == 1, "one warning per process"
    assert first.read_bytes() == b"first cubin" and second.read_bytes() == b"second cubin"
    assert cubin_cache not in first.parents


def test_a_cache_folder_that_cannot_be_made_falls_back_with_one_warning(cubin_cache, monkeypatch):
    (cubin_cache.parent / "a_file").write_text("")                 # a file where the folder should be: even root fails
    monkeypatch.setattr(build, "CUBIN_CACHE_DIR", cubin_cache.parent / "a_file" / "cubins")
    _fall_back_once(build.CUBIN_CACHE_DIR)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_folder_falls_back_with_one_warning(cubin_cache):
    cubin_cache.mkdir(mode=0o500)
    try:
        _fall_back_once(cubin_cache)
    finally:
        cubin_cache.chmod(0o700)


# NVRTC writes the log, the PTX and the cubin into buffers the build hands it. A PTX-only build (compute_XX, the
# code `--as` and GPUs newer than NVRTC run) leaves an empty log: one NUL byte. Were that buffer a `bytes` object,
# `b" " * 1` would be the interpreter's own shared `b" "`, and every later one-byte space in the process a NUL.
ONE_CHARACTER_OBJECTS = r"""
import sys
from hgemm_course.library.build import compile_cuda
source = "__global__ void touch(float* x) { x[threadIdx.x] = 1.f; }"
ptx_only = compile_cuda(source, arch="compute_90")
cubin = compile_cuda(source + " // a second build", arch="sm_90a")
assert not ptx_only.cubin and not ptx_only.log and cubin.cubin, (len(ptx_only.cubin), ptx_only.log)
expected = {                    # each object as built after the builds, and the code point it must still hold
    "b' '": (b" ", 32), "bytes([32])": (bytes([32]), 32), "' '.encode()": (" ".encode(), 32),
    "b'  '[:1]": (b"  "[:1], 32), "b'a'": (b"a", 97), "bytes(1)": (bytes(1), 0), "' '": (chr(32), 32),
    "'a'": (chr(97), 97),
}
wrong = {name: got for name, (got, code) in expected.items() if [c if isinstance(c, int) else ord(c) for c in got] != [code]}
sys.exit(f"changed by the builds: {wrong}" if wrong else 0)
"""


def test_builds_leave_the_interpreters_one_character_objects_alone():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", ONE_CHARACTER_OBJECTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


REPORT_OF_A_BUILD = r"""
from hgemm_course.library.build import compile_cuda
module = compile_cuda("__global__ void twice_reported(float* x) { x[threadIdx.x] *= 2.f; }", arch="sm_90a")
print(sorted(module.resources))
"""


def test_every_build_asks_nvrtc_for_a_compile_of_its_own(monkeypatch):
    """NVRTC 12.9+ answers a repeated compile from a cache kept across processes, running no ptxas."""
    from cuda.bindings import nvrtc

    asked = []
    real = nvrtc.nvrtcCompileProgram
    monkeypatch.setattr(nvrtc, "nvrtcCompileProgram", lambda prog, n, opts: asked.append(opts) or real(prog, n, opts))
    compile_cuda("__global__ void asked_once(float* x) { x[0] = 1.f; }", arch="sm_90a")
    version = nvrtc.nvrtcVersion()[1:]
    assert (b"-no-cache" in asked[0]) == (tuple(version) >= (12, 9)), (version, asked)


@pytest.mark.gpu
def test_a_build_repeated_in_a_fresh_process_has_its_ptxas_report_again():
    """On a machine with a driver, NVRTC's cache would hand the second process a cubin with no report."""
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", REPORT_OF_A_BUILD], capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["['_Z14twice_reportedPf']"] * 2, [r.stdout + r.stderr for r in runs]
