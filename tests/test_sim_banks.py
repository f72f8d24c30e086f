"""Bank-conflict model, against a slow twin that walks phases lane by lane and the H200's recorded counts."""
import json

import numpy as np
import pytest

from hgemm_course.library.paths import results_dir
from hgemm_course.sim import banks
from hgemm_course.sim.swizzle import TileLayout


def slow_wavefronts(addrs, access_bytes):
    phase = {4: 32, 8: 16, 16: 8}[access_bytes]
    total = 0
    for start in range(0, len(addrs), phase):
        words_in_bank = {}
        for addr in addrs[start:start + phase]:
            for word in range(addr // 4, (addr + access_bytes) // 4):
                words_in_bank.setdefault(word % 32, set()).add(word)
        total += max(len(words) for words in words_in_bank.values())
    return total


@pytest.mark.parametrize("access_bytes", [4, 8, 16])
def test_wavefronts_agree_with_slow_twin(access_bytes):
    rng = np.random.default_rng(access_bytes)
    for _ in range(300):
        spread = int(rng.choice([64, 512, 4096]))
        lanes = int(rng.choice([8, 16, 32]))
        addrs = access_bytes * rng.integers(0, spread // access_bytes, lanes)
        assert banks.wavefronts(addrs, access_bytes) == slow_wavefronts(addrs.tolist(), access_bytes)


def test_known_costs():
    assert banks.wavefronts(np.zeros(32, int), 4) == 1                       # broadcast
    assert banks.wavefronts(4 * np.arange(32), 4) == 1                       # one word per bank
    assert banks.wavefronts(128 * np.arange(32), 4) == 32                    # a column of a 128-byte pitch tile
    assert banks.wavefronts(16 * np.arange(32), 16) == 4                     # contiguous 16-byte: 4 phases
    assert banks.wavefronts(8 * np.arange(32), 8) == 2
    assert banks.ideal_wavefronts(32, 16) == 4 and banks.ideal_wavefronts(8, 16) == 1


@pytest.mark.parametrize("kind, ldmatrix_wavefronts, column_wavefronts", [
    ("linear", 32, 32), ("padded", 4, 4), ("swizzle128", 4, 4)])
def test_layouts_for_one_request(kind, ldmatrix_wavefronts, column_wavefronts):
    layout = TileLayout(kind, row_bytes=128, pad_bytes=16)
    assert banks.wavefronts(banks.ldmatrix_addrs(layout), 16) == ldmatrix_wavefronts
    assert banks.wavefronts(banks.store16_addrs(layout, warp=1), 16) == 4
    assert banks.wavefronts(banks.load4_addrs(layout, "column"), 4) == column_wavefronts
    assert banks.wavefronts(banks.load4_addrs(layout, "row"), 4) == 1


def test_lane_banks():
    assert banks.lane_banks([0, 4, 128, 132, 260]).tolist() == [0, 1, 0, 1, 1]


def test_ldmatrix_positions():
    rows, cols = banks.ldmatrix_positions(4, row0=16, col_byte0=32)
    assert rows.tolist() == [16 + l % 16 for l in range(32)]
    assert cols.tolist() == [32 + 16 * (l // 16) for l in range(32)]
    assert len(banks.ldmatrix_positions(1)[0]) == 8 and len(banks.ldmatrix_positions(2)[0]) == 16
    with pytest.raises(ValueError):
        banks.ldmatrix_positions(3)


def test_store16_covers_the_tile_once():
    seen = [tuple(p) for w in range(4) for i in range(4)
            for p in zip(*banks.store16_positions(w, i, threads=128, row_bytes=128))]
    assert sorted(seen) == [(r, 16 * c) for r in range(64) for c in range(8)]


def test_request_cost_and_errors():
    cost = banks.request_cost(np.stack([128 * np.arange(32), 4 * np.arange(32)]), 4)
    assert cost == {"requests": 2, "wavefronts": 33, "ideal_wavefronts": 2, "bank_conflicts": 31}
    with pytest.raises(ValueError, match="lane 1 .*16-byte aligned"):
        banks.wavefronts([0, 8], 16)
    with pytest.raises(ValueError, match="4, 8 or 16"):
        banks.wavefronts([0], 2)


def test_main_loop_swizzle_and_padding_are_conflict_free_for_ldmatrix():
    swz = banks.main_loop_bank_conflicts(128, 128, 64, 2, 2, layout="swizzle128")
    assert swz["per_cta_k_step"]["all"]["bank_conflicts"] == 0
    pad = banks.main_loop_bank_conflicts(128, 128, 32, 2, 2, layout="padded")["per_cta_k_step"]
    assert pad["A ldmatrix.x4"]["bank_conflicts"] == pad["B ldmatrix.x4.trans"]["bank_conflicts"] == 0
    # BK=32 halfs + 8 pad = 80-byte rows: two rows of 16-byte stores per phase share 4 banks,
    # and the rows' lines straddle 128-byte segments, which costs LDGSTS more than the conflicts
    a = pad["A cp.async 16B"]
    assert a["bank_conflicts"] == a["ideal_wavefronts"] and a["wavefronts"] > 2 * a["ideal_wavefronts"]
    lin = banks.main_loop_bank_conflicts(128, 128, 64, 2, 2, layout="linear")["per_cta_k_step"]
    for op in ("A ldmatrix.x4", "B ldmatrix.x4.trans"):
        assert lin[op]["wavefronts"] == 8 * lin[op]["ideal_wavefronts"]


def test_linear_layout_agrees_with_the_h200():
    """Rung 04 with its padding removed (research/linear_variant_probe.py), k04_linear<256, 128, 64, 64, 64, 4>
    at 2048^3 under ncu: the model's ldmatrix wavefronts and 8-way conflicts are the hardware's counts."""
    (path,) = results_dir().glob("model_banks_linear_nvidia-h200_*.json")
    measured = {r["quantity"]: r["hardware"] for r in json.loads(path.read_text())["records"]}
    model = banks.main_loop_bank_conflicts(256, 128, 64, 4, 2, layout="linear", M=2048, N=2048, K=2048)["per_kernel"]
    for key, quantity in (("wavefronts", "ldmatrix wavefronts"), ("bank_conflicts", "ldmatrix bank conflicts")):
        assert model["A ldmatrix.x4"][key] + model["B ldmatrix.x4.trans"][key] == measured[quantity]


def test_main_loop_counts_and_scaling():
    result = banks.main_loop_bank_conflicts(128, 64, 64, 2, 2, layout="swizzle128", M=1024, N=1024, K=512)
    step = result["per_cta_k_step"]
    # A: 128x64 halfs = 1024 chunks over 128 threads = 8 copies x 4 warps; ldmatrix: 4 warps x 4 k16 x 4 m16
    assert step["A cp.async 16B"]["requests"] == 32 and step["A ldmatrix.x4"]["requests"] == 64
    assert step["B cp.async 16B"]["requests"] == 16 and step["B ldmatrix.x4.trans"]["requests"] == 32
    assert result["ctas"] == 8 * 16 and result["k_steps"] == 8
    assert result["per_kernel"]["all"]["wavefronts"] == step["all"]["wavefronts"] * 128 * 8
    with pytest.raises(ValueError, match="multiples of 16"):
        banks.main_loop_bank_conflicts(128, 64, 64, 2, 8)


# ----------------------------------------------------------------------------- cp.async (LDGSTS) stores

def slow_ldgsts(shared, global_):
    """The LDGSTS rule lane by lane: per 8-lane phase and 128-byte global line, 1 wavefront if the line
    lands in one 128-byte shared segment, else one per segment (and per global bit 4 if skewed mod 32)."""
    total = 0
    for start in range(0, len(shared), 8):
        lines = {}
        for s, g in zip(shared[start:start + 8], global_[start:start + 8]):
            if s >= 0 and g >= 0:
                lines.setdefault(g // 128, []).append((s, g))
        for lanes in lines.values():
            segments = {s // 128 for s, _ in lanes}
            if len(segments) == 1:
                total += 1
            elif all((s - g) % 32 == 0 for s, g in lanes):
                total += len(segments)
            else:
                total += len({(s // 128, (g // 16) % 2) for s, g in lanes})
    return total


def test_ldgsts_agrees_with_slow_twin():
    rng = np.random.default_rng(5)
    for _ in range(400):
        lanes = int(rng.choice([8, 16, 32]))
        shared = 16 * rng.integers(0, int(rng.choice([16, 64, 512])), lanes)
        global_ = 16 * rng.integers(0, int(rng.choice([16, 64, 4096])), lanes)
        global_[rng.random(lanes) < 0.1] = -1
        assert banks.ldgsts_wavefronts(shared, global_) == slow_ldgsts(shared.tolist(), global_.tolist())


def test_ldgsts_measured_on_h200():
    # results/ncu/ldgsts_probe_20261129T1821.txt: one 128-byte line to shared offset 0, 16, ..., 112
    line = 16 * np.arange(8)
    assert [banks.ldgsts_wavefronts(o + line, 4096 + line) for o in range(0, 128, 16)] == [1, 3, 2, 4, 2, 4, 2, 3]
    assert [banks.ldgsts_wavefronts(o + 16 * np.arange(16), 16 * np.arange(16)) for o in range(0, 128, 16)] == \
        [2, 6, 4, 8, 4, 8, 4, 6]
    assert banks.ldgsts_wavefronts(line, 64 + line) == 2                      # global line split at 64 bytes
    for pitch, measured in ((128, 4), (144, 10), (160, 7), (192, 6), (256, 4), (272, 10), (288, 7), (512, 4)):
        lane = np.arange(32)
        assert banks.ldgsts_wavefronts((lane // 8) * pitch + 16 * (lane % 8), (lane // 8) * 4096 + 16 * (lane % 8)) \
            == measured
    lane = np.arange(32)
    swizzled = (lane // 8) * 128 + 16 * ((lane % 8) ^ (lane // 8))
    assert banks.ldgsts_wavefronts(swizzled, (lane // 8) * 4096 + 16 * (lane % 8)) == 4
    # the rungs' one-k-step tile copies (256 threads): padded A 672 + B 336, swizzled 256 + 128, no conflicts
    pad = banks.main_loop_bank_conflicts(256, 128, 64, 4, 2, layout="padded", M=2048, N=2048, K=2048)
    swz = banks.main_loop_bank_conflicts(256, 128, 64, 4, 2, layout="swizzle128", M=2048, N=2048, K=2048)
    def step(r, k):
        return r["per_cta_k_step"][k]
    assert (step(pad, "A cp.async 16B")["wavefronts"], step(pad, "B cp.async 16B")["wavefronts"]) == (672, 336)
    assert (step(swz, "A cp.async 16B")["wavefronts"], step(swz, "B cp.async 16B")["wavefronts"]) == (256, 128)
    assert step(pad, "A cp.async 16B")["bank_conflicts"] == step(pad, "B cp.async 16B")["bank_conflicts"] == 0
    assert swz["per_kernel"]["A cp.async 16B"]["wavefronts"] + swz["per_kernel"]["B cp.async 16B"]["wavefronts"] \
        == 1_572_864


def test_ldgsts_cost_errors():
    with pytest.raises(ValueError, match="shape"):
        banks.ldgsts_cost([0, 16], [0])
    with pytest.raises(ValueError, match="16-byte aligned"):
        banks.ldgsts_cost([8], [0])
