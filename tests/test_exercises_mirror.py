"""exercises/ and solutions/ are generated from one source per exercise (hgemm_course/check/sources/,
and the rung kernels for the kernel exercises): regenerated here, they must equal the committed files."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from hgemm_course.check import EXERCISES, KERNEL_EXERCISES
from hgemm_course.check.generate import (
    COMMENT,
    adopt,
    adopt_plain,
    exercise_text,
    generate,
    is_marker,
    regions_of,
    render,
    solution_text,
    sources,
    without_markers,
)
from hgemm_course.library.paths import KERNELS_DIR

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `python -m hgemm_course.check.generate` and commit what it writes"

# Each exercise's answer, in the words of its solution: the exercise file must not contain it, in its
# docstring, its header or its TODOs (whitespace ignored).
KEY_EXPRESSIONS = {
    "ex01_naive.py": ["block_idx[1] * block_dim[1] + thread_idx[1]"],
    "ex02_outer_product.py": ["a_tile[ty + i * THREADS_Y, kk]", "b_tile[kk, tx + j * THREADS_X]",
                              "acc[i, j] += a_frag[i] * b_frag[j]"],
    "ex02_tiling.py": ["range(tid, tile_rows * per_row, threads)"],
    "ex03_cp_async.cu": ["cp.async.cg.shared.global [%0], [%1], 16, %2;", "cp.async.wait_group %0;",
                         "cp_async_wait_group<STAGES - 2>();"],
    "ex03_wmma.cu": ["wmma::mma_sync(acc[i][j]"],
    "ex04_ldmatrix.py": ["lane % 16, lane // 16", "lane % 8, lane // 8 % 2"],
    "ex04_mma_sync.cu": ["ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans",
                         "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "load_fragments((kk + 1) % 2"],
    "ex05_swizzle.py": ["chunk ^ (row % 8)", "XOR (r mod 8)", "chunk ^ (row // 2 % 4)"],
    "ex05_swizzle_kernel.cu": ["a_lane ^ (kk * 32)", "b_lane ^ (j * 32)", "(chunk / 8) * B_PANEL + swizzle_128b",
                               "chunk ^ (row / 4 % 2)"],
    "ex06_supertile.py": ["sb_m * super_m + inner // super_n", "bid_m % super_m * super_n + bid_n % super_n"],
    "ex07_mbarrier.cu": ["(kt / STAGES) % 2", "(next / STAGES - 1) % 2", "r % 2"],
    "ex08_occupancy.py": ["min(MAX_CTAS_PER_SM"],
    "ex09_wgmma_desc.py": ["(x & 0x3FFFF) >> 4", "SBO = 1024", "LBO = 8192", "64 * row_bytes"],
    "ex09_wgmma_loop.cu": ["i * 64 * 128 + kk * 32", "kk * 16 * 128", "wgmma_wait_group<1>", "i * 64 * 64 + kk * 32"],
    "ex10_producer.cu": ["(kt / STAGES - 1) % 2", "ring.empty[(kt - 1) % STAGES]", "(kt - in_flight) % stages"],
    "ex10_ring_parity.py": ["(use - 1) % 2", "use % 2", "tile_index * k_tiles + kt"],
    "ex11_persistent.py": ["range(cta, positions, num_ctas)", "t += gridDim.x", "t += clusters"],
    "ex11_tile_loop.cu": ["t += clusters", "(cdiv(tiles, ctas) - 1) * ctas"],
    "ex13_small_skinny.py": ["2 * (M * K + K * N + M * N)", "-(-sms // tiles)"],
}


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in COMMENT)


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_generated_files_equal_the_committed_ones(tmp_path):
    generate(tmp_path)
    for folder in ("exercises", "solutions"):
        assert _files(tmp_path / folder) == _files(ROOT / folder), \
            f"{folder}/ holds files that no source makes, or misses some: {REGENERATE}"
        for name in _files(tmp_path / folder):
            made, committed = (tmp_path / folder / name).read_text(), (ROOT / folder / name).read_text()
            assert made == committed, f"{folder}/{name} is not what its source makes: {REGENERATE}"


def test_every_exercise_has_a_checker():
    names = {Path(name).stem: Path(name).suffix for name in sources()}
    assert {n for n, s in names.items() if s == ".py"} == set(EXERCISES)
    assert {n for n, s in names.items() if s == ".cu"} == set(KERNEL_EXERCISES)


@pytest.mark.parametrize("name", sources())
def test_stubs_say_what_to_do_and_solutions_carry_no_marker(name):
    comment = COMMENT[Path(name).suffix]
    exercise, solution = render(name)
    regions = regions_of(name)
    assert regions, f"{name} marks no region"
    for region in regions:
        stub = "".join(region.stub)
        assert f"{comment} TODO:" in stub, f"{name}: a stub without a TODO"
        if comment == "#":
            assert "raise NotImplementedError(" in stub
        assert "TODO" not in "".join(region.solution)
    assert not any(is_marker(line) for line in solution.splitlines())
    assert "TODO" not in solution


@pytest.mark.parametrize("name", sorted(KEY_EXPRESSIONS))
def test_no_exercise_contains_its_answer(name):
    exercise, solution = render(name)
    for key in KEY_EXPRESSIONS[name]:
        assert _squeezed(key) not in _squeezed(exercise), f"exercises/{name} gives away {key!r}"


def test_every_exercise_has_its_answer_listed():
    assert set(KEY_EXPRESSIONS) <= set(sources())
    for name, keys in KEY_EXPRESSIONS.items():
        assert any(_squeezed(key) in _squeezed(render(name)[1]) for key in keys), name


def test_kernel_markers_are_comment_lines_only():
    """The marked kernels compile as without the markers: every marker is a whole // comment line."""
    for path in KERNELS_DIR.glob("k*.cu"):
        text = path.read_text()
        for line in text.splitlines():
            if is_marker(line):
                assert line.lstrip().startswith("// "), f"{path.name}: {line!r}"
        assert "EXERCISE:" not in without_markers(text) and "SOLUTION" not in without_markers(text)


def test_a_plain_pair_becomes_a_source(tmp_path):
    solution = 'def f(x):\n    """Doc."""\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION\n'
    exercise = ('def f(x):\n    """Doc."""\n    # BEGIN SOLUTION\n    # TODO: add one.\n'
                '    raise NotImplementedError("add one")\n    # END SOLUTION\n')
    (tmp_path / "ex.py").write_text(exercise)
    (tmp_path / "sol.py").write_text(solution)
    source = adopt(tmp_path / "ex.py", tmp_path / "sol.py")
    assert "    # EXERCISE: # TODO: add one.\n" in source
    assert exercise_text(source, "#") == exercise
    assert solution_text(source, "#") == without_markers(solution)

    for folder in ("exercises", "solutions", "sources"):
        (tmp_path / folder).mkdir()
    (tmp_path / "exercises" / "ex99_new.py").write_text(exercise)
    (tmp_path / "solutions" / "ex99_new.py").write_text(solution)
    assert adopt_plain(tmp_path, tmp_path / "sources") == ["ex99_new.py"]      # no source yet
    (tmp_path / "solutions" / "ex99_new.py").write_text(without_markers(solution))
    assert adopt_plain(tmp_path, tmp_path / "sources") == []                   # generated: left alone
    (tmp_path / "solutions" / "ex99_new.py").write_text(solution.replace("x + 1", "1 + x"))
    assert adopt_plain(tmp_path, tmp_path / "sources") == ["ex99_new.py"]      # edited by hand: taken again
    assert "return 1 + x" in (tmp_path / "sources" / "ex99_new.py").read_text()


@pytest.mark.parametrize("rung", ["05", "09", "10", "11"])
def test_a_marked_kernel_compiles_exactly_as_without_its_markers(rung, tmp_path):
    from hgemm_course.library.build import compile_cuda
    from hgemm_course.library.ladder import get

    def code(ptx: str) -> list[str]:
        return [line for line in ptx.splitlines() if not line.lstrip().startswith((".file", ".loc", "//"))]

    spec = get(rung)
    bare = tmp_path / spec.kernel_path.name
    bare.write_text(without_markers(spec.kernel_path.read_text()))
    assert bare.read_text() != spec.kernel_path.read_text()
    marked = compile_cuda(spec.kernel_path, name_expressions=spec.name_expressions, arch=spec.arch)
    unmarked = compile_cuda(bare, name_expressions=spec.name_expressions, arch=spec.arch)
    assert code(marked.ptx) == code(unmarked.ptx)
