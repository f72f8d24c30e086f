"""Exercise 08: how many CTAs fit on one SM of the H200 at once.

An SM runs several CTAs side by side as long as each of its resources holds all of them.
For a CTA of ``threads`` threads, ``regs_per_thread`` registers (ptxas's report) and
``smem_bytes`` of shared memory (static + dynamic), on sm_90:

  1. CTA slots:     at most 32 CTAs per SM.
  2. threads:       64 warps (2048 threads) per SM; a CTA holds ceil(threads / 32) warps.
  3. registers:     64K per SM, in 4 sub-partitions of 16384 that a warp cannot span.
                    A warp is given regs_per_thread * 32 registers rounded up to a whole
                    number of 256-register units; each sub-partition holds
                    16384 // (registers per warp) warps.
  4. shared memory: 228 KB (233472 bytes) per SM. Each CTA takes its shared memory plus
                    1 KB the driver reserves for it, rounded up to 128 bytes.

The answer is the smallest of the four counts of whole CTAs. The inputs are CTAs that can
launch at all (1-1024 threads, 1-255 registers, at most 227 KB of shared memory).

Check it:  hgemm-course check ex08_occupancy
  (checks ./ex08_occupancy.py, else ./exercises/ex08_occupancy.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex08_occupancy --path my_ex08.py
  or in a notebook:  from hgemm_course.check import check; check("ex08", ctas_per_sm)
"""

WARP_SIZE = 32
MAX_CTAS_PER_SM = 32
MAX_WARPS_PER_SM = 64
SUB_PARTITIONS = 4
REGS_PER_SUB_PARTITION = 16384
REG_ALLOC_UNIT = 256
SMEM_PER_SM = 233472
SMEM_RESERVED_PER_CTA = 1024
SMEM_ALLOC_UNIT = 128


def round_up(x: int, unit: int) -> int:
    """The smallest multiple of ``unit`` that is at least ``x``."""
    return -(-x // unit) * unit


def ctas_per_sm(threads: int, regs_per_thread: int, smem_bytes: int) -> int:
    """CTAs of this shape resident on one H200 SM at once."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: take the smallest of the four limits in the docstring.
    # EXERCISE: raise NotImplementedError("take the smallest of the four limits in the docstring")
    warps = -(-threads // WARP_SIZE)
    by_threads = MAX_WARPS_PER_SM // warps
    regs_per_warp = round_up(regs_per_thread * WARP_SIZE, REG_ALLOC_UNIT)
    by_registers = SUB_PARTITIONS * (REGS_PER_SUB_PARTITION // regs_per_warp) // warps
    by_smem = SMEM_PER_SM // round_up(smem_bytes + SMEM_RESERVED_PER_CTA, SMEM_ALLOC_UNIT)
    return min(MAX_CTAS_PER_SM, by_threads, by_registers, by_smem)
    # END SOLUTION
