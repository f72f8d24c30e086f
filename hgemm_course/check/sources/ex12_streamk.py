"""Exercise 12: which K-iterations one CTA of a stream-K grid computes, and which tiles it must fix up.

Rung 11 hands each persistent CTA whole output tiles. When the tiles do not fill whole waves (3072^3
on the H200: 144 cluster tiles on 66 clusters, 2.18 waves) the last wave runs on a fifth of the GPU.
Stream-K hands out K-iterations instead. Lay the tiles' iterations end to end, tile by tile: global
iteration i is K-iteration i % iters_per_tile of tile i // iters_per_tile, and there are
tiles * iters_per_tile of them. Each of the `ctas` CTAs takes one contiguous range of them, the
ranges in CTA order (CTA 0 from iteration 0), as even as whole iterations allow: every CTA gets
total // ctas iterations and the first total % ctas CTAs one more. A CTA with nothing to do has an
empty range, begin == end.

A range may start or end inside a tile. A tile that more than one CTA computes part of is a
*partial* tile, finished through a workspace in global memory with one flag per CTA:

- its *owner* is the CTA that computes the tile's K-iteration 0. After its own part it waits for
  the flag of every other CTA that computed part of the tile, adds that CTA's FP32 partial sums
  from the workspace, and stores the tile to C;
- every other CTA that computes part of it (a *contributor*) writes its FP32 partial sums to its
  workspace slot and raises its flag; it never stores that tile to C.

A tile one CTA computes whole goes straight to C and needs no fix-up. The owner is the first CTA
on purpose: a contributor's part of a tile is the first thing in its range, the owner's part the
last thing in its own, so the partials are usually ready before the owner asks for them. A fix-up
is not free: a 128x256 FP32 partial is 128 KiB written and 128 KiB read back, where one K-iteration
streams 48 KiB of operands into a CTA.

Write the three functions, with `ctas` for the grid's CTAs (gridDim.x):

    cta_k_range(cta, tiles, iters_per_tile, ctas) -> (begin, end), the CTA's global iterations [begin, end)
    tiles_to_fix_up(cta, tiles, iters_per_tile, ctas)
        -> [(tile, k_begin, k_end, is_owner), ...]: the partial tiles the CTA computes part of, in the order
           it computes them; k_begin, k_end the tile's own K-iterations it computes, [k_begin, k_end) within
           0 .. iters_per_tile; is_owner True for the tile's owner. Tiles it computes whole are not listed.
    ctas_of_tile(tile, tiles, iters_per_tile, ctas) -> (first_cta, last_cta), the CTAs that compute the
           tile's first and its last K-iteration: the owner waits for the flags of first_cta + 1 .. last_cta.
           The owner works this out in a few integer operations, without walking the other CTAs' ranges:
           which CTA holds a given global iteration?

Check it:  hgemm-course check ex12_streamk
  (checks ./ex12_streamk.py, else ./exercises/ex12_streamk.py, else the course's copy; it prints which)
  your own copy:     hgemm-course check ex12_streamk --path my_ex12.py
  or in a notebook:  from hgemm_course.check import check; check("ex12", cta_k_range)  (the other two next to it)
"""
from __future__ import annotations


def cta_k_range(cta: int, tiles: int, iters_per_tile: int, ctas: int) -> tuple[int, int]:
    """[begin, end) of the global K-iterations CTA ``cta`` of a ``ctas``-CTA stream-K grid computes."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: total // ctas iterations each, one more for the first total % ctas CTAs; contiguous in CTA order.
    # EXERCISE: raise NotImplementedError("count the iterations of the CTAs before this one, then add this CTA's own share")
    total = tiles * iters_per_tile
    share, extra = divmod(total, ctas)                # every CTA `share`, the first `extra` CTAs one more
    begin = cta * share + min(cta, extra)             # the CTAs before this one, with their extra iterations
    return begin, begin + share + (1 if cta < extra else 0)
    # END SOLUTION


def tiles_to_fix_up(cta: int, tiles: int, iters_per_tile: int, ctas: int) -> list[tuple[int, int, int, bool]]:
    """(tile, k_begin, k_end, is_owner) of each partial tile CTA ``cta`` computes part of, in order."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: walk the range tile by tile; keep the pieces that are not a whole tile, with the owner marked.
    # EXERCISE: raise NotImplementedError("cut [begin, end) at tile boundaries; a piece shorter than the tile is a partial")
    begin, end = cta_k_range(cta, tiles, iters_per_tile, ctas)
    pieces = []
    it = begin
    while it < end:                                   # one piece per tile the range touches
        tile = it // iters_per_tile
        k_begin = it - tile * iters_per_tile
        k_end = min(end - tile * iters_per_tile, iters_per_tile)
        if k_end - k_begin < iters_per_tile:          # not the whole tile: another CTA computes the rest
            pieces.append((tile, k_begin, k_end, k_begin == 0))
        it += k_end - k_begin
    return pieces
    # END SOLUTION


def ctas_of_tile(tile: int, tiles: int, iters_per_tile: int, ctas: int) -> tuple[int, int]:
    """(first_cta, last_cta): the CTAs that compute tile ``tile``'s first and last K-iteration."""
    # BEGIN SOLUTION
    # EXERCISE: # TODO: the CTA holding global iteration i, for the tile's first and last iteration.
    # EXERCISE: raise NotImplementedError("which CTA holds iteration i? the first total % ctas ranges are one longer")
    share, extra = divmod(tiles * iters_per_tile, ctas)
    long_ranges = extra * (share + 1)                 # iterations held by the first `extra` CTAs

    def cta_of(i: int) -> int:
        return i // (share + 1) if i < long_ranges else extra + (i - long_ranges) // share

    return cta_of(tile * iters_per_tile), cta_of((tile + 1) * iters_per_tile - 1)
    # END SOLUTION
