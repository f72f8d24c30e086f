"""Split-K apart (rung 12, apart=True): a Python twin of the kernel's StreamK work split, of the slots its pieces
go to and of who adds them. k12_streamk writes each piece of a split tile to slot 0 (the first segment of its
unit's stream-K range) or slot 1 (a later one); then each unit, for each split tile it holds a piece of, finds
the units whose ranges hold the tile's slices and the slot each used, and adds its share of the tile's fragments.
Every piece must be read exactly once per fragment, by its own tile, no whole tile, and every fragment of a split
tile added exactly once, by a unit that holds a piece of that tile."""
import random

import pytest


def cdiv(a, b):
    return -(-a // b)


class StreamK:
    """kernels/k12_streamk.cu's StreamK, line for line."""

    def __init__(self, tiles, k_tiles, dp_tiles, units):
        self.tiles, self.k_tiles, self.dp_tiles, self.units = tiles, k_tiles, dp_tiles, units

    def dp_count(self, u):
        return cdiv(self.dp_tiles - u, self.units) if u < self.dp_tiles else 0

    def sk_begin(self, u):
        slices = (self.tiles - self.dp_tiles) * self.k_tiles
        return u * (slices // self.units) + (u if u < slices % self.units else slices % self.units)

    def unit_of(self, slice_):
        slices = (self.tiles - self.dp_tiles) * self.k_tiles
        q, r = slices // self.units, slices % self.units
        return slice_ // (q + 1) if slice_ < r * (q + 1) else r + (slice_ - r * (q + 1)) // q

    def segment(self, u, s):
        if s < self.dp_count(u):
            return u + s * self.units, 0, self.k_tiles
        begin, end = self.sk_begin(u), self.sk_begin(u + 1)
        tile = begin // self.k_tiles + s - self.dp_count(u)
        if tile * self.k_tiles >= end:
            return -1, 0, 0
        k_begin = 0 if tile * self.k_tiles > begin else begin - tile * self.k_tiles
        k_end = end - tile * self.k_tiles if end - tile * self.k_tiles < self.k_tiles else self.k_tiles
        return self.dp_tiles + tile, k_begin, k_end


def written(work):
    """{(unit, slot): (tile, k_begin, k_end)} as k12_streamk writes them, and the tiles it stores whole."""
    slots, whole = {}, []
    for u in range(work.units):
        s = 0
        while (seg := work.segment(u, s))[0] >= 0:
            tile, k_begin, k_end = seg
            if k_begin > 0 or k_end < work.k_tiles:
                key = (u, int(s > work.dp_count(u)))
                assert key not in slots, f"unit {u} writes slot {key[1]} twice"
                slots[key] = seg
            else:
                whole.append(tile)
            s += 1
    return slots, whole


def read(work):
    """{tile: [(unit, slot)]}: the pieces of each split tile, as every unit that adds part of it reads them."""
    out = {}
    for sk_tile in range(work.tiles - work.dp_tiles):
        first = work.unit_of(sk_tile * work.k_tiles)
        last = work.unit_of((sk_tile + 1) * work.k_tiles - 1)
        if first == last:
            continue
        out[work.dp_tiles + sk_tile] = [(u, int(work.sk_begin(u) < sk_tile * work.k_tiles))
                                        for u in range(first, last + 1)]
    return out


def added(work, consumers, fragments):
    """{(tile, fragment): [unit]}: the units whose consumer warpgroups add each fragment of each split tile, as
    k12_streamk's add_split_tiles deals them (warpgroup w of the tile's units takes fragments w, w + workers, ..)."""
    out = {}
    for u in range(work.units):
        s = 0
        while (seg := work.segment(u, s))[0] >= 0:
            s += 1
            tile, k_begin, k_end = seg
            if k_begin == 0 and k_end == work.k_tiles:
                continue
            sk_tile = tile - work.dp_tiles
            first = work.unit_of(sk_tile * work.k_tiles)
            last = work.unit_of((sk_tile + 1) * work.k_tiles - 1)
            workers = (last - first + 1) * consumers
            for consumer in range(consumers):
                for f in range((u - first) * consumers + consumer, fragments, workers):
                    out.setdefault((tile, f), []).append(u)
    return out


def check(tiles, k_tiles, dp_tiles, units, consumers=2, fragments=32):
    work = StreamK(tiles, k_tiles, dp_tiles, units)
    slots, whole = written(work)
    reads = read(work)
    assert sorted(whole + list(reads)) == list(range(tiles)), "every tile stored whole or added, once"
    seen = set()
    for tile, keys in reads.items():
        pieces = sorted((slots[key][1], slots[key][2]) for key in keys)
        assert all(slots[key][0] == tile for key in keys), (tile, keys)
        assert pieces[0][0] == 0 and pieces[-1][1] == k_tiles, "the pieces cover the tile's K"
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:])), "without gaps or overlaps"
        seen.update(keys)
    assert seen == set(slots), "every piece written is read"
    adders = added(work, consumers, fragments)
    assert sorted(adders) == sorted((tile, f) for tile in reads for f in range(fragments)), \
        "every fragment of every split tile is added, and nothing else"
    for (tile, f), units_adding in adders.items():
        assert len(units_adding) == 1, f"fragment {f} of tile {tile} added by units {units_adding}"
        assert units_adding[0] in {unit for unit, _ in reads[tile]}, "by a unit that holds a piece of the tile"


@pytest.mark.parametrize("tiles, k_tiles, units", [(1, 1024, 132), (16, 1024, 132), (4, 256, 132), (2, 1024, 132),
                                                   (64, 512, 132), (8, 7, 132), (131, 64, 132), (133, 64, 132)])
def test_every_piece_is_added_once_by_its_own_tile(tiles, k_tiles, units):
    check(tiles, k_tiles, 0, units)


@pytest.mark.parametrize("consumers, fragments", [(1, 8), (1, 16), (1, 32), (2, 32), (2, 64)])
def test_every_fragment_is_added_once_whatever_the_tile(consumers, fragments):
    """The plan's tiles: 64 x 64, 64 x 128, 64 x 256 (one consumer), 128 x 128 and 128 x 256 (two); pieces per
    tile from 2 to 132, more and fewer warpgroups than fragments."""
    for tiles, k_tiles in ((1, 1024), (4, 256), (12, 313), (16, 64), (66, 9), (131, 64), (200, 20)):
        check(tiles, k_tiles, 0, 132, consumers, fragments)


def test_on_random_splits_with_whole_tiles_first():
    rng = random.Random(12)
    for _ in range(3000):
        units = rng.randint(1, 140)
        tiles = rng.randint(1, 400)
        k_tiles = rng.randint(1, 300)
        dp_tiles = rng.choice([0, 0, (tiles // units) * units, max(0, (tiles // units - 1) * units)])
        if (tiles - dp_tiles) * k_tiles == 0:
            continue
        check(tiles, k_tiles, dp_tiles, units, rng.choice([1, 2]), rng.choice([8, 16, 32, 64]))


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K, bm, bn, consumers", [(200, 136, 20000, 64, 64, 1), (100, 1000, 9992, 128, 128, 2),
                                                        (256, 256, 65536, 128, 128, 2), (72, 520, 4104, 64, 256, 1),
                                                        (1000, 1000, 1000, 128, 256, 2)])
def test_split_apart_is_right_on_tails_and_when_launched_again(M, N, K, bm, bn, consumers):
    """Rung 12 split apart on the GPU: C poisoned with NaN, checked against an FP32 reference, then the launch kept
    by the first call run again into a fresh poison (gemm(out=)'s path); at 1000^3 the 128 x 256 tiles are 32, so
    some tiles go out whole beside the split ones."""
    from dataclasses import replace

    import cupy

    from hgemm_course.measurement import verification
    from hgemm_course.library.ladder import r12_streamk as r12

    a, b, seed = verification.random_inputs(M, N, K, xp=cupy)
    reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    stages = {(64, 64): 8, (128, 128): 6, (64, 256): 5, (128, 256): 4}[bm, bn]     # as the plan takes them
    tiles = replace(r12.TILES, bm=bm, bn=bn, stages=stages)
    c = cupy.full((M, N), cupy.nan, cupy.float16)
    again = r12.launch(a, b, c, tiles, (8, 2), 1, consumers, 0, apart=True)
    assert verification.compare(c, reference, K=K, rung="12", seed=seed).passed
    c.fill(cupy.nan)
    again()
    assert verification.compare(c, reference, K=K, rung="12", seed=seed).passed


@pytest.mark.gpu
def test_a_kept_launch_follows_its_workspace_when_another_launch_grows_it():
    """Two split-apart launches on one stream share its workspace: the second, on tiles four times the size, makes
    the workspace allocate anew, and the first one's kept launch (its arguments packed once, ladder/packed.py) must then write
    its pieces into the new partial sums, not the freed ones."""
    from dataclasses import replace

    import cupy

    from hgemm_course.measurement import verification
    from hgemm_course.library.ladder import r12_streamk as r12

    small_tiles, big_tiles = replace(r12.TILES, bm=64, bn=64, stages=8), replace(r12.TILES, bm=128, bn=128, stages=6)
    key = (cupy.cuda.Device().id, cupy.cuda.get_current_stream().ptr)
    with r12._workspaces_lock:
        r12._workspaces.pop(key, None)          # a fresh workspace, sized by the small launch first
    small = verification.random_inputs(64, 64, 8192, xp=cupy)
    big = verification.random_inputs(512, 512, 8192, xp=cupy)
    results, partials = [], []
    for (a, b, _), tiles, consumers in ((small, small_tiles, 1), (big, big_tiles, 2)):
        c = cupy.full((a.shape[0], b.shape[1]), cupy.nan, cupy.float16)
        results.append((a, b, c, r12.launch(a, b, c, tiles, (8, 2), 1, consumers, 0, apart=True)))
        partials.append(r12.workspace(*key).partials.data.ptr)
    assert partials[0] != partials[1]           # the big launch grew the workspace
    for a, b, c, again in (results[0], results[1], results[0]):
        c.fill(cupy.nan)
        again()
        reference = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
        assert verification.compare(c, reference, K=a.shape[1], rung="12").passed
