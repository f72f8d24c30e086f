"""Exercise 09: the wgmma shared-memory matrix descriptor.

wgmma.mma_async reads its operands straight from shared memory. It does not take an address
there but a 64-bit *matrix descriptor*: where the tile starts, how far apart its 8-row core
matrices (swizzle atoms) lie, and which swizzle the data was stored with. The hardware facts
(PTX ISA, "Matrix Descriptor Format" of the asynchronous warpgroup MMA):

    bits  0-13   the start address, in units of 16 bytes
    bits 16-29   the leading dimension byte offset (LBO), in units of 16 bytes
    bits 32-45   the stride dimension byte offset (SBO), in units of 16 bytes
    bits 49-51   the base offset: 0 when the swizzle pattern starts on its own boundary
                 (1024 bytes for the 128B swizzle), which the course's stages always do
    bits 62-63   the swizzle mode: "none" 0, "128B" 1, "64B" 2, "32B" 3
    other bits   0

Every address and offset is a multiple of 16 bytes. A field of 14 bits in 16-byte units holds
2^18 bytes; a CTA's shared memory (at most 228 KB) fits, and the hardware ignores the address
bits above those. wgmma asks for the descriptor of each operand of each product; the chapter
shows which LBO and SBO rung 09's A and B tiles take.

Extra question: the descriptor of A for one product of a stage. A stage holds a row-major
(BM, bk) tile of A (K-major), stored by TMA with the swizzle whose span is one row of
2 * bk bytes (bk = 64: 128B, 32: 64B, 16: 32B); its 8-row atoms lie one after the other, the
LBO of a K-major swizzled operand is unused (write 16), and a k16 step is 16 halves along the
row. What is the descriptor of product i (rows 64 i ..), k16 step kk, of a stage at stage_addr?
Optional: the checker checks it once it no longer raises NotImplementedError, and says so.

Check it:  hgemm-course check ex09_wgmma_desc
  (checks ./ex09_wgmma_desc.py, else ./exercises/ex09_wgmma_desc.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex09_wgmma_desc --path my_ex09.py
  or in a notebook:  from hgemm_course.check import check; check("ex09", wgmma_descriptor)
                     (a_descriptor next to it)
"""


def wgmma_descriptor(smem_addr: int, leading_byte_offset: int, stride_byte_offset: int, swizzle: str) -> int:
    """The 64-bit wgmma shared-memory matrix descriptor, as a Python int (0 <= result < 2**64)."""
    # BEGIN SOLUTION
    # TODO: each field in the units and bits the table gives, the other bits 0.
    raise NotImplementedError("each field in the units and bits the table gives, the other bits 0")
    # END SOLUTION


def a_descriptor(stage_addr: int, i: int, kk: int, bk: int) -> int:
    """The descriptor of A for product ``i`` at k16 step ``kk`` of a stage at ``stage_addr`` holding a
    row-major (BM, ``bk``) tile swizzled with a span of one row (``bk`` = 64, 32 or 16)."""
    # BEGIN SOLUTION
    # TODO: the row's bytes give the swizzle, the atom's bytes the SBO, and the start moves with i and kk.
    raise NotImplementedError("the row's bytes give the swizzle, the atom's the SBO; the start moves with i, kk")
    # END SOLUTION
