"""rung_design: every design parameter that differs between two rungs, read from the ladder's own definitions and
kernel sources (compiled with NVRTC for the recorded H200; no GPU needed), and a rung's throughput across sizes."""
import pytest

from hgemm_course.course import kernel_source, rung_design
from hgemm_course.library.ladder import r07_tma, r09_wgmma, r10_warp_specialized as r10, r11_persistent as r11
from hgemm_course.sim import H200

TILE, THREADS, STAGES, CTAS = "tile of C per CTA (BM x BN)", "threads per CTA", "ring stages (STAGES)", "CTAs per SM"
AHEAD, SUPER = "slices loaded ahead", "super tile (SUPER_M x SUPER_N)"


def _changes(a, b):
    return {row["parameter"]: (row[a], row[b]) for row in rung_design.rung_changes(a, b)}


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
    assert kernel_source.prefetch_distance(kernel_source.without_comments(code)) == ahead


def test_prefetch_says_when_a_kernel_names_neither():
    with pytest.raises(ValueError, match="neither a refill of slice kt \\+ STAGES - d nor a release"):
        kernel_source.prefetch_distance("for (int kt = 0; kt < k_tiles; ++kt) {}")


def _write_run(folder, kind, date, records):
    import json
    (folder / f"{kind}_nvidia-h200_{date.replace('-', '').replace(':', '')[:15]}.json").write_text(
        json.dumps({"provenance": {"date": date, "gpu": "NVIDIA H200"}, "records": records}))


def _bench_with_cycles(folder, cycles_at: dict, rung="10", date="2026-12-02T10:00:00+00:00"):
    """A bench run held on the stream (after HOLD_SINCE) with the timing build's launches: size -> median cycles,
    four launches each within 0.5% of it."""
    records = [{"rung": rung, "M": n, "N": n, "K": n, "tflops": 600.0, "cublas_tflops": 700.0, "pct_cublas": 85.7,
                "cycles": c, "clock_ghz": 1.5, "launch_clocks": [{"cycles": c * f} for f in (0.995, 1.0, 1.002, 1.005)]}
               for n, c in cycles_at.items()]
    _write_run(folder, "bench", date, records)


def test_size_sweep_is_flat_where_the_cycles_per_unit_of_work_are_level(tmp_path, capsys):
    # 1024^3 fills a quarter of one wave of 128x256 tiles: its cycles do not count towards the verdict line
    _bench_with_cycles(tmp_path, {1024: 400_000.0, 2048: 2.0e6 / 64, 4096: 2.0e6 / 8, 8192: 2.0e6})
    found = rung_design.size_sweep("10", folder=tmp_path)["10"]
    out = capsys.readouterr().out
    assert [r["size"] for r in found["rows"]] == [1024, 2048, 4096, 8192]
    assert [r["tiles"] for r in found["rows"]] == [32, 128, 512, 2048] and found["rows"][-1]["waves"] == 16
    assert found["rows"][0]["slots_used"] == pytest.approx(32 / 132)
    assert found["rows"][-1]["flop_per_sm_cycle"] == pytest.approx(2 * 8192**3 / (2.0e6 * 132))
    assert [v.outcome for v in found["verdicts"]] == ["more", "level", "level"] and found["flat"] is True
    assert out.startswith("RECORDED on the NVIDIA H200 (bench_nvidia-h200_20261202T100000.json): rung 10, 128x256 tiles")
    assert out.rstrip().endswith("(2048^3, 4096^3, against 8192^3): flat: each is level with 8192^3 in SM cycles per "
                                 "unit of work")


def test_size_sweep_is_not_flat_where_a_full_size_takes_more(tmp_path, capsys):
    _bench_with_cycles(tmp_path, {2048: 1.3 * 2.0e6 / 64, 4096: 2.0e6 / 8, 8192: 2.0e6})
    found = rung_design.size_sweep("10", folder=tmp_path)["10"]
    assert found["flat"] is False and [v.outcome for v in found["verdicts"]] == ["more", "level"]
    assert "not flat: 2048^3 differs beyond the spread from 8192^3" in capsys.readouterr().out


def test_size_sweep_skips_runs_from_before_the_stream_hold(tmp_path, capsys):
    _bench_with_cycles(tmp_path, {2048: 1.0, 8192: 2.0}, date="2026-11-30T10:00:00+00:00")
    assert rung_design.size_sweep("10", folder=tmp_path) == {}
    assert "No recorded run of rung 10 at 1024, 2048, 4096, 8192 that held the stream" in capsys.readouterr().out


def test_size_sweep_of_the_recorded_rungs(capsys):
    found = rung_design.size_sweep("10", "11")
    assert set(found) == {"10", "11"}
    for rung in found.values():
        assert [r["size"] for r in rung["rows"]] == [1024, 2048, 4096, 8192]
        assert all(r["cycles"] for r in rung["rows"]) and isinstance(rung["flat"], bool)
    assert capsys.readouterr().out.count("SM cycles per 8192^3 of work") == 6


def test_size_sweep_in_one_stretch_prints_tflops_at_the_clock_beside_it(capsys):
    from hgemm_course.library.target import RECORDED

    rows = rung_design.size_sweep("05", sizes=(4096, 8192), one_stretch=True)["05"]["rows"]
    for r in rows:
        assert r["tflops"] == pytest.approx(r["flop_per_sm_cycle"] * RECORDED.sm_count * r["clock_ghz"] / 1e3, rel=1e-3)
    assert "vendor  % vendor" not in capsys.readouterr().out
