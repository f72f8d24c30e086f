"""kernel_source: a banner section, a function or a stretch of lines of a kernel or snippet source, as it compiles."""
import pytest

from hgemm_course.course import kernel_source


CU = """// header
#pragma once

// What the wrapper does.
template <int N>
__device__ __forceinline__ void wrap(unsigned a) {
    asm volatile("op %0;" :: "r"(a));
}

__global__ void k(int x) {
    auto helper = [&](int i) {
        wrap<1>(i);
    };
    // ---- prologue: first ----
    helper(0);
    // ---- main loop: the loop ----
    for (int i = 0; i < x; ++i) {
        helper(i);
    }
    // ---- epilogue: last ----
    wrap<2>(x);
}
"""


def test_source_excerpt_reads_a_banner_section_to_the_next_banner_or_the_end_of_its_block():
    assert kernel_source.source_excerpt(CU, "main loop").splitlines() == [
        "    // ---- main loop: the loop ----", "    for (int i = 0; i < x; ++i) {", "        helper(i);", "    }"]
    assert kernel_source.source_excerpt(CU, "epilogue").splitlines() == ["    // ---- epilogue: last ----", "    wrap<2>(x);"]


def test_source_excerpt_reads_a_function_with_its_comment_and_a_lambda_not_a_call():
    assert kernel_source.source_excerpt(CU, "wrap").splitlines()[:2] == ["// What the wrapper does.", "template <int N>"]
    assert kernel_source.source_excerpt(CU, "wrap").rstrip().endswith('asm volatile("op %0;" :: "r"(a));\n}')
    assert kernel_source.source_excerpt(CU, "helper").splitlines() == [
        "    auto helper = [&](int i) {", "        wrap<1>(i);", "    };"]
    with pytest.raises(ValueError, match="no banner"):
        kernel_source.source_excerpt(CU, "nothing")


def test_show_source_prints_the_kernel_as_it_compiles(capsys):
    out = kernel_source.show_source("03", "main loop")
    assert out.startswith("// hgemm_course/library/kernels/k03_wmma.cu: main loop\n") and "wmma::mma_sync" in out
    assert "BEGIN SOLUTION" not in out and "EXERCISE" not in out and capsys.readouterr().out == out
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in kernel_source.show_source("ldmatrix", "ldmatrix_x4")


def test_source_lines_read_a_stretch_of_a_kernel_body(capsys):
    assert kernel_source.source_lines(CU, "// ---- prologue", "helper(0);").splitlines() == [
        "    // ---- prologue: first ----", "    helper(0);"]
    with pytest.raises(ValueError, match="no line"):
        kernel_source.source_lines(CU, "helper(0);", "auto helper")
    out = kernel_source.show_lines("06", "const int grid_m", "const int bid_n")
    assert out.startswith("// hgemm_course/library/kernels/k06_supertile.cu\n") and "SUPER_M" in out
