"""chapter.rung_parameters and rung_changes: every design parameter that differs between two rungs, read from the
ladder's own definitions and kernel sources (compiled with NVRTC for the recorded H200; no GPU needed)."""
import pytest

from hgemm_course.course import chapter
from hgemm_course.library.ladder import r07_tma, r09_wgmma, r10_warp_specialized as r10, r11_persistent as r11
from hgemm_course.sim import H200

TILE, THREADS, STAGES, CTAS = "tile of C per CTA (BM x BN)", "threads per CTA", "ring stages (STAGES)", "CTAs per SM"
AHEAD, SUPER = "slices loaded ahead", "super tile (SUPER_M x SUPER_N)"


def _changes(a, b):
    return {row["parameter"]: (row[a], row[b]) for row in chapter.rung_changes(a, b)}


def _smem_bound(smem_bytes):
    """CTAs per SM that shared memory alone allows: the SM's bytes over the CTA's, with the driver's 1 KiB each."""
    return H200["smem_per_sm"] // (smem_bytes + H200["smem_reserved_per_cta"])


def test_07_to_09_lists_more_than_the_compute(capsys):
    changes = _changes("07", "09")
    t7, t9 = r07_tma.TILES, r09_wgmma.TILES
    assert changes[TILE] == (f"{t7.bm}x{t7.bn}", f"{t9.bm}x{t9.bn}")
    assert changes[THREADS] == (f"{t7.threads} ({t7.threads // 32} warps)", f"{t9.threads} ({t9.threads // 32} warps)")
    assert changes[STAGES] == (str(t7.stages), str(t9.stages))
    assert changes[SUPER] == ("x".join(map(str, r07_tma.SUPER)), "x".join(map(str, r09_wgmma.SUPER)))
    # rung 07 refills slice kt + STAGES - 1 at the top of iteration kt, rung 09 slice kt + STAGES - 2
    assert changes[AHEAD] == (f"{t7.stages - 1} (STAGES - 1)", f"{t9.stages - 2} (STAGES - 2)")
    assert changes[CTAS][0].startswith("1 (") and changes[CTAS][1] == "2 (limited by shared memory)"
    assert _smem_bound(r09_wgmma.kernel().smem_bytes) == 2
    assert "wgmma" in changes["MMA"][1] and "mma.sync" in changes["MMA"][0]
    assert "k-slice (BK)" not in changes and "grid" not in changes
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"rung 07 -> rung 09, sized for sm_90a (H100, H200): {len(changes)} of 16 parameters differ"
    assert out[1].split()[:1] == ["parameter"] and out[-1].startswith("the same in both: k-slice (BK) 64;")


def test_09_to_10_shows_the_tile_doubling_beside_the_roles():
    changes = _changes("09", "10")
    assert changes[TILE] == ("128x128", f"{r10.TILES.bm}x{r10.TILES.bn}")
    assert changes["warp roles"][1] == f"1 producer + {r10.CONSUMERS} consumer warpgroups"
    assert changes["registers after setmaxnreg"] == ("-", f"producer {r10.PRODUCER_REGS}, consumers {r10.CONSUMER_REGS}")
    assert changes[CTAS] == ("2 (limited by shared memory)", "1 (limited by registers, shared memory)")
    # the producer refills a stage as soon as the consumers free slice kt - 1
    assert changes[AHEAD] == ("1 (STAGES - 2)", f"{r10.TILES.stages - 1} (STAGES - 1)")
    assert SUPER not in changes and "epilogue" not in changes


def test_10_to_11_keeps_the_tile_and_ring_and_changes_grid_cluster_epilogue():
    changes = _changes("10", "11")
    assert set(changes) == {"features used", "PTX snippet headers", "dynamic shared memory", "grid", "cluster",
                            "epilogue"}
    assert changes["grid"] == ("one CTA per tile", "persistent: each CTA walks tiles")
    assert changes["cluster"] == ("none", f"{r11.CLUSTER_M} CTAs along M, B multicast")
    assert changes["epilogue"] == ("st.global from registers", "stmatrix to shared memory, TMA store")
    assert changes["dynamic shared memory"][1] == f"{r11.kernel().smem_bytes // 1024} KiB"
    assert "stmatrix" in changes["PTX snippet headers"][1].split()


@pytest.mark.parametrize("code, ahead", [
    ("const int next = kt + STAGES - 1;", "STAGES - 1"),
    ("const int next = kt + STAGES - 2; mbar_arrive(&empty[(kt - 1) % STAGES]);", "STAGES - 2"),
    ("// the loads of slice kt + STAGES - 2 run\nif (kt > 0) release_stage((it - 1) % STAGES);", "STAGES - 1"),
])
def test_prefetch_is_read_from_the_code_not_its_comments(code, ahead):
    assert chapter._prefetch(chapter._CPP_COMMENT.sub("", code)) == ahead


def test_prefetch_says_when_a_kernel_names_neither():
    with pytest.raises(ValueError, match="neither a refill of slice kt \\+ STAGES - d nor a release"):
        chapter._prefetch("for (int kt = 0; kt < k_tiles; ++kt) {}")
