// wgmma.cuh: Hopper's warpgroup MMA (sm_90a). The 4 warps of a warpgroup multiply a 64 x N x 16
// product asynchronously; the tensor cores read A and B straight from shared memory through
// 64-bit matrix descriptors and accumulate into fp32 registers spread over the 128 threads.
// PTX ISA: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions": wgmma.mma_async,
// wgmma.fence, wgmma.commit_group, wgmma.wait_group, "Matrix Descriptor Format" and
// "Shared Memory Matrix Layout".
#pragma once

// ---- the shared-memory matrix descriptor ---------------------------------------------------
// 64 bits: start address, leading and stride byte offsets (each stored >> 4 in 14 bits), a base
// offset and the swizzle mode. The field positions:
constexpr int WGMMA_DESC_START_SHIFT = 0;        // bits 0-13: start address >> 4
constexpr int WGMMA_DESC_LBO_SHIFT = 16;         // bits 16-29: leading dimension byte offset >> 4
constexpr int WGMMA_DESC_SBO_SHIFT = 32;         // bits 32-45: stride dimension byte offset >> 4
constexpr int WGMMA_DESC_BASE_OFFSET_SHIFT = 49; // bits 49-51: base offset (0: atoms start 1024-byte aligned)
constexpr int WGMMA_DESC_SWIZZLE_SHIFT = 62;     // bits 62-63: swizzle mode
constexpr unsigned WGMMA_DESC_FIELD_MASK = 0x3FFFF; // an address or offset keeps its low 18 bits, then >> 4
constexpr unsigned long long WGMMA_SWIZZLE_128B = 1; // the mode numbers: 0 none, 1 128B, 2 64B, 3 32B
// The 128-byte swizzle repeats every 8 rows of 128 bytes: one swizzle atom.
constexpr unsigned WGMMA_SWIZZLE_ATOM_BYTES = 8 * 128;
// For a K-major operand the 16 halves (32 bytes) of one k16 step lie inside one 128-byte swizzled
// row, so the leading offset is never used; 16 bytes (stored as 1) is the customary value.
constexpr unsigned WGMMA_KMAJOR_LBO_UNUSED = 16;

// Which dimension of an operand is contiguous in shared memory: K (A row-major, "no transpose")
// or M / N (B row-major (K, N): N is contiguous, "transpose"). The value is imm-trans-a / -b.
enum class WgmmaMajor : int { K = 0, MN = 1 };

// One field of the descriptor: the low 18 bits of a byte address or offset, in 16-byte units.
__host__ __device__ constexpr unsigned long long wgmma_desc_field(unsigned bytes) {
    return (bytes & WGMMA_DESC_FIELD_MASK) >> 4;
}

// The descriptor of a 128B-swizzled operand whose first swizzle atom starts at smem_addr.
// K-major (A): rows of 128 bytes along K, atoms of 8 rows `sbo` = 1024 bytes apart along M; lbo
// unused. MN-major (B): rows of 64 halves along N, 8 k-rows per atom, atoms `sbo` = 1024 bytes
// apart along K, 64-column panels `lbo` bytes apart along N. A k16 step inside a K-major atom
// moves smem_addr by 32 bytes; the hardware applies the swizzle to the final addresses.
// (constexpr, so a test can check the encoding at compile time.)
__host__ __device__ constexpr unsigned long long wgmma_desc_128b(unsigned smem_addr, unsigned lbo, unsigned sbo) {
    return (wgmma_desc_field(smem_addr) << WGMMA_DESC_START_SHIFT) | (wgmma_desc_field(lbo) << WGMMA_DESC_LBO_SHIFT) |
           (wgmma_desc_field(sbo) << WGMMA_DESC_SBO_SHIFT) | (0ull << WGMMA_DESC_BASE_OFFSET_SHIFT) |
           (WGMMA_SWIZZLE_128B << WGMMA_DESC_SWIZZLE_SHIFT);
}

// ---- ordering and completion ---------------------------------------------------------------
// Orders this warp's earlier register and shared-memory accesses before the wgmma.mma_async that
// follow (needed before the first wgmma and whenever the accumulators were touched in between).
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

// Closes the group of wgmma.mma_async issued since the last commit.
__device__ __forceinline__ void wgmma_commit_group() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most N committed wgmma groups are still in flight; their accumulators and the
// shared memory they read are then free.
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// ---- the multiply ----------------------------------------------------------------------------
// The operand list is generated: "%<t><u>" numbers operand 10 t + u (t empty: 0-9), so a decade
// of accumulator operands is one macro and the inputs that follow are numbered the same way.
#define WGMMA_OP(t, u) "%" #t #u
#define WGMMA_DECADE(t)                                                                                          \
    WGMMA_OP(t, 0) ", " WGMMA_OP(t, 1) ", " WGMMA_OP(t, 2) ", " WGMMA_OP(t, 3) ", " WGMMA_OP(t, 4) ", "          \
    WGMMA_OP(t, 5) ", " WGMMA_OP(t, 6) ", " WGMMA_OP(t, 7) ", " WGMMA_OP(t, 8) ", " WGMMA_OP(t, 9)
#define WGMMA_ACC_32 WGMMA_DECADE() ", " WGMMA_DECADE(1) ", " WGMMA_DECADE(2) ", " WGMMA_OP(3, 0) ", " WGMMA_OP(3, 1)
#define WGMMA_ACC_64                                                                                             \
    WGMMA_DECADE() ", " WGMMA_DECADE(1) ", " WGMMA_DECADE(2) ", " WGMMA_DECADE(3) ", " WGMMA_DECADE(4) ", "      \
    WGMMA_DECADE(5) ", " WGMMA_OP(6, 0) ", " WGMMA_OP(6, 1) ", " WGMMA_OP(6, 2) ", " WGMMA_OP(6, 3)
#define WGMMA_ACC_96                                                                                             \
    WGMMA_DECADE() ", " WGMMA_DECADE(1) ", " WGMMA_DECADE(2) ", " WGMMA_DECADE(3) ", " WGMMA_DECADE(4) ", "      \
    WGMMA_DECADE(5) ", " WGMMA_DECADE(6) ", " WGMMA_DECADE(7) ", " WGMMA_DECADE(8) ", " WGMMA_OP(9, 0) ", "      \
    WGMMA_OP(9, 1) ", " WGMMA_OP(9, 2) ", " WGMMA_OP(9, 3) ", " WGMMA_OP(9, 4) ", " WGMMA_OP(9, 5)
#define WGMMA_ACC_128                                                                                            \
    WGMMA_DECADE() ", " WGMMA_DECADE(1) ", " WGMMA_DECADE(2) ", " WGMMA_DECADE(3) ", " WGMMA_DECADE(4) ", "      \
    WGMMA_DECADE(5) ", " WGMMA_DECADE(6) ", " WGMMA_DECADE(7) ", " WGMMA_DECADE(8) ", " WGMMA_DECADE(9) ", "     \
    WGMMA_DECADE(10) ", " WGMMA_DECADE(11) ", " WGMMA_OP(12, 0) ", " WGMMA_OP(12, 1) ", " WGMMA_OP(12, 2) ", "   \
    WGMMA_OP(12, 3) ", " WGMMA_OP(12, 4) ", " WGMMA_OP(12, 5) ", " WGMMA_OP(12, 6) ", " WGMMA_OP(12, 7)
// The instruction with its accumulators ACC and the seven inputs after them: descriptor of A,
// descriptor of B, scale_d (a predicate made from a register), then the immediates imm-scale-a,
// imm-scale-b, imm-trans-a, imm-trans-b.
#define WGMMA_ASM(N, ACC, DA, DB, SD, SA, SB, TA, TB)                                                          \
    "{\n.reg .pred scale_d;\nsetp.ne.b32 scale_d, " SD ", 0;\n"                                               \
    "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 {" ACC "}, " DA ", " DB ", scale_d, " SA ", " SB    \
    ", " TA ", " TB ";\n}\n"
// The accumulators as "+f" operands: n8 column block j holds d[j][0..3].
#define WGMMA_D4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define WGMMA_D32(j) WGMMA_D4(j), WGMMA_D4(j + 1), WGMMA_D4(j + 2), WGMMA_D4(j + 3), \
                     WGMMA_D4(j + 4), WGMMA_D4(j + 5), WGMMA_D4(j + 6), WGMMA_D4(j + 7)
// No negation of A or B (imm-scale-a = imm-scale-b = 1).
constexpr int WGMMA_NO_NEGATE = 1;

// D (64, N) = A (64, 16) * B (16, N) + (scale_d ? D : 0), issued by all 128 threads of a
// warpgroup. d[j] is the m16n8 fragment of mma.sync for column block j of this warp's 16 rows:
// warp w of the warpgroup holds rows 16 w + lane / 4 (d[j][0..1]) and + 8 (d[j][2..3]), columns
// 8 j + 2 (lane % 4) + {0, 1}. A and B come from shared memory through their descriptors;
// MAJOR_A / MAJOR_B say which dimension is contiguous there. N is 64, 128, 192 or 256.
template <int N, WgmmaMajor MAJOR_A, WgmmaMajor MAJOR_B>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[N / 8][4], unsigned long long desc_a,
                                               unsigned long long desc_b, bool scale_d) {
    static_assert(N == 64 || N == 128 || N == 192 || N == 256,
                  "wgmma_m64nNk16 is generated for N = 64, 128, 192 and 256");
    constexpr int TA = static_cast<int>(MAJOR_A);
    constexpr int TB = static_cast<int>(MAJOR_B);
    if constexpr (N == 64) {
        asm volatile(WGMMA_ASM(64, WGMMA_ACC_32, WGMMA_OP(3, 2), WGMMA_OP(3, 3), WGMMA_OP(3, 4), WGMMA_OP(3, 5),
                               WGMMA_OP(3, 6), WGMMA_OP(3, 7), WGMMA_OP(3, 8))
                     : WGMMA_D32(0)
                     : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(scale_d)), "n"(WGMMA_NO_NEGATE),
                       "n"(WGMMA_NO_NEGATE), "n"(TA), "n"(TB)
                     : "memory");
    } else if constexpr (N == 128) {
        asm volatile(WGMMA_ASM(128, WGMMA_ACC_64, WGMMA_OP(6, 4), WGMMA_OP(6, 5), WGMMA_OP(6, 6), WGMMA_OP(6, 7),
                               WGMMA_OP(6, 8), WGMMA_OP(6, 9), WGMMA_OP(7, 0))
                     : WGMMA_D32(0), WGMMA_D32(8)
                     : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(scale_d)), "n"(WGMMA_NO_NEGATE),
                       "n"(WGMMA_NO_NEGATE), "n"(TA), "n"(TB)
                     : "memory");
    } else if constexpr (N == 192) {
        asm volatile(WGMMA_ASM(192, WGMMA_ACC_96, WGMMA_OP(9, 6), WGMMA_OP(9, 7), WGMMA_OP(9, 8), WGMMA_OP(9, 9),
                               WGMMA_OP(10, 0), WGMMA_OP(10, 1), WGMMA_OP(10, 2))
                     : WGMMA_D32(0), WGMMA_D32(8), WGMMA_D32(16)
                     : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(scale_d)), "n"(WGMMA_NO_NEGATE),
                       "n"(WGMMA_NO_NEGATE), "n"(TA), "n"(TB)
                     : "memory");
    } else {
        asm volatile(WGMMA_ASM(256, WGMMA_ACC_128, WGMMA_OP(12, 8), WGMMA_OP(12, 9), WGMMA_OP(13, 0), WGMMA_OP(13, 1),
                               WGMMA_OP(13, 2), WGMMA_OP(13, 3), WGMMA_OP(13, 4))
                     : WGMMA_D32(0), WGMMA_D32(8), WGMMA_D32(16), WGMMA_D32(24)
                     : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(scale_d)), "n"(WGMMA_NO_NEGATE),
                       "n"(WGMMA_NO_NEGATE), "n"(TA), "n"(TB)
                     : "memory");
    }
}
