"""Exercise 09: the wgmma shared-memory matrix descriptor.

wgmma.mma_async reads its operands straight from shared memory. It does not take an address
there but a 64-bit *matrix descriptor*: where the tile starts, how far apart its 8-row core
matrices (swizzle atoms) lie, and which swizzle the data was stored with. The layout (PTX ISA,
"Matrix Descriptor Format" of the asynchronous warpgroup MMA):

    bits  0-13   start address               (smem_addr & 0x3FFFF) >> 4
    bits 14-15   0
    bits 16-29   leading dimension byte offset  (LBO & 0x3FFFF) >> 4
    bits 30-31   0
    bits 32-45   stride dimension byte offset   (SBO & 0x3FFFF) >> 4
    bits 46-48   0
    bits 49-51   base offset: 0 when the swizzle pattern starts on its own boundary (1024 bytes
                 for the 128B swizzle), which the course's stages always do
    bits 52-61   0
    bits 62-63   swizzle mode: "none" 0, "128B" 1, "64B" 2, "32B" 3

Every address and offset is a multiple of 16 bytes, so its low 4 bits are dropped; of what is
left only 14 bits fit, so the value is first cut to its low 18 bits (a CTA's shared memory is
at most 228 KB < 2^18 bytes). Rung 09 builds one descriptor per wgmma operand: for A
(K-major, 128B swizzle) LBO = 16 (unused), SBO = 1024 (8 rows of 128 bytes); for B (MN-major)
LBO = 8192 (the next 64-column panel), SBO = 1024 (the next 8 k-rows).

Check it:  hgemm-course check ex09_wgmma_desc
  (checks ./ex09_wgmma_desc.py, else ./exercises/ex09_wgmma_desc.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex09_wgmma_desc --path my_ex09.py
  or in a notebook:  from hgemm_course.check import check; check("ex09", wgmma_descriptor)
"""


def wgmma_descriptor(smem_addr: int, leading_byte_offset: int, stride_byte_offset: int, swizzle: str) -> int:
    """The 64-bit wgmma shared-memory matrix descriptor, as a Python int (0 <= result < 2**64)."""
    # BEGIN SOLUTION
    # TODO: encode each field as (x & 0x3FFFF) >> 4 and place it at its bit; add the swizzle mode's code.
    raise NotImplementedError("(x & 0x3FFFF) >> 4 of address, LBO, SBO at bits 0, 16, 32; the swizzle code at bit 62")
    # END SOLUTION
