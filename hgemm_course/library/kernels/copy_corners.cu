// copy_corners.cu: the copies of gemm()'s padded path (hgemm_course/library/padded.py), for shapes whose N or K is
// off a multiple of 8 (TMA needs rows of 16-byte multiples). One launch copies up to two row-major matrices of
// 16-bit elements, each into the top-left corner of a wider one (A and B into their zero-bordered buffers) or
// out of it (C's corner into the caller's array):
//     dst[r * ld_dst + c] = src[r * ld_src + c]      for r < rows, c < cols
// Nothing outside the corner is written, so the buffers' zero borders stay zero from their allocation on, and
// a call pays for the bytes of the matrices, not for a fill. The elements are moved as bits (unsigned short).
//
// A CTA is 8 warps on 8 consecutive rows (a band); a warp copies COLS_PER_CTA columns of its row, PER_LANE per
// lane, lane-contiguous: each load and each store of the warp covers 64 consecutive bytes, whatever the row's
// alignment. The PER_LANE loads are issued before the stores, so each lane keeps PER_LANE reads in flight.
// The bands of copy 0 come first along y, then those of copy 1; along x the CTAs walk the wider copy's columns.
constexpr int WARPS = 8;                              // rows per band, one warp each
constexpr int PER_LANE = 8;                           // elements each lane copies per band
constexpr int COLS_PER_CTA = 32 * PER_LANE;           // columns of a row one warp copies

extern "C" __global__ void __launch_bounds__(32 * WARPS)
copy_corners(const unsigned short* __restrict__ src0, unsigned short* __restrict__ dst0, long long ld_src0,
             long long ld_dst0, int rows0, int cols0,
             const unsigned short* __restrict__ src1, unsigned short* __restrict__ dst1, long long ld_src1,
             long long ld_dst1, int rows1, int cols1) {
    const int bands0 = (rows0 + WARPS - 1) / WARPS;
    const int bands = bands0 + (rows1 + WARPS - 1) / WARPS;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int col = blockIdx.x * COLS_PER_CTA + lane;     // this lane's first column; then every 32nd
    for (int band = blockIdx.y; band < bands; band += gridDim.y) {   // more bands than the grid's 65535 rows
        const bool first = band < bands0;
        const long long row = static_cast<long long>(first ? band : band - bands0) * WARPS + warp;
        const int rows = first ? rows0 : rows1, cols = first ? cols0 : cols1;
        if (row >= rows || col >= cols) continue;
        const unsigned short* src = (first ? src0 : src1) + row * (first ? ld_src0 : ld_src1);   // (cols,)
        unsigned short* dst = (first ? dst0 : dst1) + row * (first ? ld_dst0 : ld_dst1);         // (cols,)
        unsigned short v[PER_LANE];                                                                // this lane's
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j)
            if (col + 32 * j < cols) v[j] = src[col + 32 * j];
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j)
            if (col + 32 * j < cols) dst[col + 32 * j] = v[j];
    }
}
