"""The recorded ablations' readings, held: each verdict a chapter prints from results/ stays what its text says."""
import pytest

from hgemm_course.course import ablation

H = ablation.HOPPER
AGAINST_09 = {label: "09 wgmma" for label in ("09 + 4 stages", "09 + 8x4 super tile", "09 + 1 CTA/SM",
                                              "09 + wait 0, prefetch S-1")}
RING = {"1p1c 128x128 s3 wait 1": "1p1c 128x128 s3 wait 0", "10 128x256 s3": None,
        "10 128x256 s4 (rung 10)": "10 128x256 s3"}
TO_11 = {"11 cluster 2, non-persistent": "11 no cluster, non-persistent"}


def outcomes(path, against=None):
    return {(v.a, v.b): v.outcome for v in ablation.show(path, against)}


def test_07_to_09_the_compute_pays_and_the_other_settings_each_cost(capsys):
    got = outcomes(H / "ablate_07_to_09.json", AGAINST_09)
    assert got[("07 at 09's 128x128 s3 16x2", "09 wgmma")] == "fewer"
    for label in ("09 + 4 stages", "09 + 1 CTA/SM"):
        assert got[("09 wgmma", label)] == "more"
    assert "RECORDED on the NVIDIA H200" in capsys.readouterr().out


def test_09_to_10_one_consumer_and_two_are_level_at_one_tile():
    got = outcomes(H / "ablate_09_to_10.json")
    assert got[("09 at 4 stages", "10 1p1c 128x128")] == "fewer"
    assert got[("10 1p1c 128x128", "10 1p2c 128x128")] == "level"
    assert got[("10 1p2c 128x128", "10 1p2c 128x256 (rung 10)")] == "fewer"


def test_ring_depth_two_stages_starve_the_consumers():
    got = outcomes(H / "ablate_ring_depth.json", RING)
    assert got[("1p1c 128x128 s2 wait 0", "1p1c 128x128 s3 wait 0")] == "fewer"
    assert got[("1p1c 128x128 s3 wait 1", "1p1c 128x128 s4 wait 1")] == "fewer"
    waits = {w["label"]: w for w in ablation.show_ring_waits()}
    assert waits["1p1c 128x128 s2 wait 0"]["consumer_wait_pct"] > 2 * waits["1p1c 128x128 s3 wait 0"]["consumer_wait_pct"]
    assert all(0 <= w["producer_wait_pct"] <= 100 and 0 <= w["consumer_wait_pct"] <= 100 for w in waits.values())


def test_wait_depth_and_unroll_are_level_on_rung_10():
    got = outcomes(H / "ablate_wait_unroll.json", {"10 K loop unrolled by 2": "10 as it is (wait 1)"})
    assert set(got.values()) == {"level"}


def test_10_to_11_persistence_pays_clusters_do_not():
    got = outcomes(H / "ablate_10_to_11.json", TO_11)
    assert got[("10 as it is", "11 no cluster, non-persistent")] == "fewer"
    assert got[("11 no cluster, non-persistent", "11 no cluster, persistent")] == "fewer"
    assert got[("11 no cluster, persistent", "11 cluster 2, persistent (rung 11)")] == "level"


def test_tile_width_names_the_widths_it_refuses(capsys):
    ablation.show(H / "ablate_tile_width.json")
    out = capsys.readouterr().out
    assert "128x160 (refused)" in out and "generated for N in (64, 128, 192, 256)" in out
    assert "247808 bytes of shared memory" in out


def test_rung_09_long_scoreboard_sits_on_the_full_barrier_wait():
    top, second = ablation.stalls_by_instruction(H / "ncu_k09_source_sass_4096.csv")[:2]
    assert "TRYWAIT" in top["after"] and top["share_of_all_samples"] > 0.3
    # the full wait: every thread of each of the 4 warps, once per k-slice of each 128x128 tile at 4096^3
    assert top["threads"] == 32 and top["executed"] == (4096 // 128) ** 2 * 4 * (4096 // 64)
    # thread 0's empty wait: one thread, a small share of the samples
    assert "TRYWAIT" in second["after"] and second["threads"] == 1 and second["share_of_all_samples"] < 0.02


def test_show_stalls_by_instruction_prints_the_counts(capsys):
    ablation.show_stalls_by_instruction(H / "ncu_k09_source_sass_4096.csv")
    out = capsys.readouterr().out
    assert "262144" in out and "[UR7]" in out and "[R3+URZ]" in out


@pytest.mark.parametrize("label", ["nonexistent"])
def test_against_names_a_recorded_step(label):
    with pytest.raises(KeyError):
        ablation.show(H / "ablate_09_to_10.json", {"10 1p2c 128x128": label})


def test_rung_07s_smaller_tile_pays_only_through_the_second_cta_it_makes_room_for():
    got = outcomes(H / "ablate_07_settings.json")
    assert got[("07 as it is", "07 at 128x128, 4 warps")] == "more"
    assert got[("07 at 128x128, 4 warps", "07 at 128x128 s3")] == "fewer"
    assert got[("07 at 128x128 s3", "07 at 09's 128x128 s3 16x2")] == "level"


def test_an_ablation_step_is_judged_against_a_rung_by_the_launches_of_both(capsys):
    judged = ablation.compare_step_with_rung(ablation.ABLATION_03_TO_04, "04f + 4 stages", "05", 8192)
    out = capsys.readouterr().out
    assert judged is not None and "ablate_03_to_04.json" in out and "results/bench_" in out
    assert judged.what == "SM cycles at 8192^3, two runs" and str(judged) in out
    assert ablation.compare_step_with_rung(ablation.ABLATION_03_TO_04, "04f + 4 stages", "05", 333) is None
