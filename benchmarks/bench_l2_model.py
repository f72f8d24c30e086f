"""Time the L2 model on the full 8192^3 schedule (BM=128, BN=64, BK=64, 132 CTAs in flight).

Run: ``python3 benchmarks/bench_l2_model.py``. The first call compiles (or loads Numba's cache)
on a small problem; the timed calls are the full schedule, row-major and 8x16 super tiles.
The bar: each under 10 s on a 2-core CPU.
"""
import time

from hgemm_course.sim import cta_order, l2_model

M = N = K = 8192
BM, BN, BK = 128, 64, 64


def main():
    start = time.perf_counter()
    l2_model(256, 256, 256, BM, BN, BK, cta_order("row_major", 2, 4))
    print(f"compile / cache load: {time.perf_counter() - start:.2f} s")
    grid_m, grid_n = M // BM, N // BN
    for kind, params in (("row_major", {}), ("supertile", {"super_m": 8, "super_n": 16})):
        order = cta_order(kind, grid_m, grid_n, **params)
        start = time.perf_counter()
        result = l2_model(M, N, K, BM, BN, BK, order)
        seconds = time.perf_counter() - start
        print(f"{kind:10s} {str(params):32s} {seconds:6.2f} s  hit rate {result.hit_rate:.3f}  "
              f"DRAM {result.dram_bytes / 2**30:6.2f} GiB ({result.dram_over_compulsory:.1f}x compulsory)")


if __name__ == "__main__":
    main()
