"""gemm()'s profiles beside cuBLASLt's kernel at chapter 13's shapes, and the shapes where it trails
(hgemm_course.course.small_skinny_profiles), on the recorded H200 files and on made-up profiles."""
from hgemm_course.course import small_skinny as ss
from hgemm_course.course import small_skinny_profiles as ssp
from hgemm_course.viz import vendor_sweep_data


def test_trailing_rows_are_the_shapes_under_the_threshold_lowest_first():
    data = vendor_sweep_data()
    rows = ssp.trailing_rows(data)
    assert [r["pct"] for r in rows] == sorted(p for p in data["pct"] if p < ssp.TRAILING_PCT)
    assert rows[0]["shape"] == data["min_shape"] and rows[0]["launch"].startswith("rung ")
    assert set(rows[0]["profiled"]) == {"plan", "cublaslt"}
    assert "the plan runs rung" in ssp.format_trailing(rows)


def test_kernel_tile_reads_the_course_templates_and_cublaslt_names():
    assert ssp.kernel_tile("void k11_persistent<128, 256, 64, 4, 1, 1, 1, 2, 40, 232>(const __half *)") == (128, 256)
    assert ssp.kernel_tile("k12_streamk<64, 128, 64, 8, 8, 2, 1, 1, 40, 232>") == (64, 128)
    assert ssp.kernel_tile("nvjet_sm90_hsh_192x96_64x5_1x2_h_bz_NNT") == (96, 192)     # column-major: C^T's tile
    assert ssp.kernel_tile("k12_add_partials<128, 128, 8, 2, 2>") is None
    assert ssp.kernel_tile("sm90_xmma_gemm_f16f16") is None


def test_profile_pairs_set_each_kernels_tiles_and_cycles_side_by_side():
    rows = ssp.profile_pairs(((1536, 1536, 1536), (3, 5, 7)))     # the second has no profile: left out
    assert [r["shape"] for r in rows] == [(1536, 1536, 1536)]
    plan, vendor = rows[0]["plan"], rows[0]["cublaslt"]
    assert plan["tile"] == (128, 192) and plan["tiles"] == 12 * 8
    assert vendor["tile"] == (96, 192) and vendor["tiles"] == 16 * 8
    assert plan["cycles"] > vendor["cycles"] > 0
    assert f"took {plan['cycles'] / vendor['cycles']:.2f}x cuBLASLt's" in ssp.format_profile_pairs(rows)


def test_profiled_shapes_are_the_trailing_ones_lowest_first_then_the_others():
    sweep = {"shapes": [(1, 2, 3), (4, 5, 6), (1536, 1536, 1536), (7, 8, 9)], "pct": [95.0, 60.0, 80.0, 89.9]}
    shapes = ssp.profiled_shapes(sweep)
    assert shapes[:3] == [(4, 5, 6), (1536, 1536, 1536), (7, 8, 9)]
    assert shapes[3:] == [s for s in ssp.PROFILED if s != (1536, 1536, 1536)] and (1, 2, 3) not in shapes


def _profile(rung, kernel, cycles, **counters):
    return {"rung": rung, "M": 96, "N": 5000, "K": 3000, "variant": "default", "kernel": kernel, "cycles": cycles,
            "sm_clock_mhz": 1800.0, "tensor_pipe_active_pct": 40.0, "dram_read_bytes": 31e6,
            "stalls": {"barrier": 1.0, "long_scoreboard": 3.0, "selected": 1.0}, **counters}


def test_profile_pairs_count_busy_sms_l2_requests_and_dram_and_set_their_ratios(tmp_path):
    from hgemm_course.measurement import records

    ours = _profile("plan", "void k11_persistent<64, 128, 64, 8, 1, 1, 1, 1, 40, 232>(const __half *)", 40000,
                    sm_active_cycles=24000.0, sm_elapsed_cycles=40000.0, l2_read_requests=8e6,
                    l2_read_sectors=16e6, dram_peak_pct=30.0)
    theirs = _profile("cublaslt", "nvjet_sm90_hsh_64x96_64x10_4x1_v_bz_NNT", 20000, sm_active_cycles=18000.0,
                      sm_elapsed_cycles=20000.0, l2_read_requests=5e6, l2_read_sectors=15e6, dram_peak_pct=55.0)
    records.write_run([ours], kind="profile", folder=tmp_path)
    records.write_run([theirs], kind="profile", folder=tmp_path)
    old = _profile("plan", "k11_persistent<64, 64, 64, 8, 1, 1, 1, 1, 40, 232>", 30000)      # recorded before the
    old["M"] = 16                                                                           # counters: no ratio
    records.write_run([old, {**_profile("cublaslt", "nvjet_sm90_hsh_128x16_64x11_4x1_v_bz_NNT", 20000), "M": 16}],
                      kind="profile", folder=tmp_path)
    from unittest import mock

    with mock.patch("hgemm_course.measurement.profile.profiles_folder", return_value=tmp_path):
        rows = ssp.profile_pairs([(96, 5000, 3000), (16, 5000, 3000)])
    new, before = rows
    assert new["plan"]["sm_busy_pct"] == 60.0 and new["cublaslt"]["sm_busy_pct"] == 90.0
    assert new["plan"]["sectors_per_request"] == 2.0 and new["cublaslt"]["sectors_per_request"] == 3.0
    assert new["plan"]["tile"] == (64, 128) and new["cublaslt"]["tile"] == (96, 64)
    ratios = ssp.pair_ratios(new)
    assert ratios["cycles"] == 2.0 and ratios["l2_requests"] == 1.6 and ratios["dram_read"] == 1.0
    assert abs(ratios["busy_cycles"] - 24000 / 18000) < 1e-12        # busy cycles: cycles x share of SMs busy
    assert before["plan"]["sm_busy_pct"] is None and ssp.pair_ratios(before)["busy_cycles"] is None
    text = ssp.format_profile_pairs(rows)
    assert ratios["idle_sms"] == 1.5 and ratios["larger"] == "idle_sms"                # 90% of SMs busy against 60%
    assert abs(ratios["idle_sms"] * ratios["busy_cycles"] - ratios["cycles"]) < 1e-12     # the two factors
    assert ("took 2.00x cuBLASLt's kernel's SM cycles = 1.50x (SMs at work) x 1.33x (busy SMs' cycles): more of the "
            "gap is SMs left idle") in text
    assert "and 1.60x its L2 read requests, 1.00x its DRAM read" in text
    assert "took 1.50x cuBLASLt's kernel's SM cycles (one profile each); 1.00x its DRAM read" in text
    assert "More of the gap is SMs left idle at 1 of 2 shapes: 96x5000x3000" in text
    level = {**new, "plan": {**new["plan"], "cycles": 20300}}          # 1.5% more cycles: no gap to split
    text = ssp.format_profile_pairs([level])
    assert "within 2% of its cycles, or fewer" in text and "Within 2% of cuBLASLt's cycles, or fewer at 1 of 1" in text


def test_cublaslt_tiles_read_from_its_names_account_for_the_grids_it_launched():
    """Every recorded cuBLASLt profile: the tiles of C its name's tile makes, rounded up to its cluster (the name's
    third AxB), are the CTAs it launched, or a whole multiple of them where it cuts K (split-K), or it launched one
    CTA per SM where there are more tiles (a persistent kernel)."""
    import re

    from hgemm_course.measurement.profile import recorded_profile

    seen = 0
    for M, N, K in ssp.PROFILED:
        r = recorded_profile("cublaslt", M, N, K)
        if r is None or r.get("grid") is None:
            continue
        rows, cols = ssp.kernel_tile(r["kernel"])
        tiles = -(-M // rows) * -(-N // cols)
        a, b = map(int, re.search(r"nvjet_\w+?_\d+x\d+_\d+x\d+_(\d+)x(\d+)_", r["kernel"]).groups())
        # the tiles of each dimension rounded up to the cluster's extent along it (either way round), or all the
        # tiles rounded up to the cluster's size
        rounded = {-(-tiles // (a * b)) * a * b} | {-(-(-(-M // rows)) // p) * p * -(-(-(-N // cols)) // q) * q
                                                    for p, q in ((a, b), (b, a))}
        if "splitK" in r["kernel"]:
            assert any(r["grid"] % t == 0 for t in rounded | {tiles}), (M, N, K, r["kernel"], r["grid"])
        elif r["grid"] == ss.SMS:                   # persistent: one CTA per SM, each taking tiles in turn
            assert tiles > ss.SMS, (M, N, K, r["kernel"], r["grid"])
        else:
            assert r["grid"] in rounded, (M, N, K, r["kernel"], r["grid"])
        seen += 1
    assert seen >= 5
