"""Exercise 13: the two counts that say what a small or skinny product can hope for.

A GEMM moves data and does arithmetic. In fp16, C = A @ B with A of M x K and B of K x N does 2MNK
floating-point operations (a multiply and an add per term) and, at the least, reads A and B once and writes
C once: 2 bytes per element, 2(MK + KN + MN) bytes. Their ratio is the product's *arithmetic intensity*, in
FLOPs per byte. Below the GPU's *ridge* (its compute roof over its DRAM bandwidth; chapter 13 prints the H200's)
a product cannot be faster than its bytes take to move: its *memory roof* is bytes / bandwidth.
Decode shapes (M of 16 to 128) sit far below the ridge.

Small products also leave SMs idle: at 256 x 256 x 65536, 64 x 64 tiles make only 16 tiles for the H200's
132 SMs. *Split-K* cuts every tile along K into pieces, so that the tiles' pieces fill the SMs: with T tiles
on S SMs, ceil(S / T) pieces per tile. Each piece sums part of K; the tile's owner adds the other pieces'
partial sums before it stores C. Where the tiles alone fill the SMs, a tile stays one piece. Tiles cover C
whole: a tile past the edge of C still counts, however few of its rows or columns are inside.

Write the three functions:

    arithmetic_intensity(M, N, K) -> FLOPs per byte of an fp16 GEMM, A and B read once, C written once (a float)
    memory_roof_us(M, N, K, bandwidth_gbs) -> microseconds those bytes take at bandwidth_gbs GB/s, where a GB
        is 10^9 bytes, as bandwidths are quoted (a float)
    split_pieces(M, N, bm, bn, sms) -> pieces per tile when every bm x bn tile of C is cut by K so that the
        tiles' pieces fill the sms SMs (an int, at least 1)

Check it:  hgemm-course check ex13_small_skinny
  (checks ./ex13_small_skinny.py, else ./exercises/ex13_small_skinny.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex13_small_skinny --path my_ex13.py
  or in a notebook:  from hgemm_course.check import check; check("ex13", arithmetic_intensity)  (the other two next to it)
"""
from __future__ import annotations


def arithmetic_intensity(M: int, N: int, K: int) -> float:
    """FLOPs per byte of C = A @ B in fp16: A (M x K) and B (K x N) read once, C (M x N) written once."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: count the FLOPs (two per term of every dot product) and the bytes (2 per element of A, B and C).
    # EXERCISE: raise NotImplementedError("FLOPs: each of the M x N outputs is a dot product of length K; bytes: every element of A, B and C once")
    flops = 2 * M * N * K
    moved = 2 * (M * K + K * N + M * N)
    return flops / moved
    # END SOLUTION


def memory_roof_us(M: int, N: int, K: int, bandwidth_gbs: float) -> float:
    """Microseconds that reading A and B and writing C once take at ``bandwidth_gbs`` (10^9 bytes per second)."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: the bytes of A, B and C over the bandwidth in bytes per second, in microseconds.
    # EXERCISE: raise NotImplementedError("bytes / (bandwidth_gbs * 1e9) is seconds; a microsecond is 1e-6 s")
    moved = 2 * (M * K + K * N + M * N)
    return moved / (bandwidth_gbs * 1e9) * 1e6
    # END SOLUTION


def split_pieces(M: int, N: int, bm: int, bn: int, sms: int) -> int:
    """Pieces per tile when every (bm x bn) tile of C is cut by K so that the tiles' pieces fill ``sms`` SMs."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: count the tiles that cover C (a part tile at an edge is a tile), then the pieces each needs.
    # EXERCISE: raise NotImplementedError("tiles first, rounding up along M and along N; then enough pieces per tile to reach sms")
    tiles = -(-M // bm) * -(-N // bn)
    return -(-sms // tiles)
    # END SOLUTION
