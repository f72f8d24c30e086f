"""hgemm_course.measurement.sass: the main loop found in nvdisasm's listing, and what ptxas scheduled for the mma.sync rungs."""
from __future__ import annotations

from dataclasses import replace

import pytest

from hgemm_course.measurement import sass
from hgemm_course.course.cli import main

# nvdisasm -c's layout: a label line, then one instruction per line with its offset
LISTING = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0020*/                   HMMA.16816.F32 R8, R4, R6, R8 ;
        /*0030*/              @!P0 BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0040*/                   HMMA.16816.F32 R12, R4, R6, R12 ;
        /*0050*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R10.64] ;
        /*0060*/                   HMMA.16816.F32 R16, R4, R6, R16 ;
        /*0070*/               @P1 BRA `(.L_x_0) ;
.L_x_1:
        /*0080*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0090*/                   BRA `(.L_x_1) ;
        /*00a0*/                   EXIT ;
"""


def test_the_main_loop_is_the_backward_branch_densest_in_tensor_work():
    loop = sass.main_loop(LISTING, "toy")
    assert loop.instructions == 7 and loop.timeline == "LHBHGH."
    assert loop.counts == {"LDSM": 1, "HMMA": 3, "BAR": 1, "LDGSTS": 1, "BRA": 1}
    assert loop.mma_after_barrier == 2
    assert "2 of its 3 mma.sync after the CTA barrier" in loop.describe()
    with pytest.raises(ValueError, match="no loop"):
        sass.main_loop("        /*0000*/                   EXIT ;\n")


@pytest.fixture(scope="module")
def schedules():
    from hgemm_course.library.ladder import r04_mma_sync as r04
    from hgemm_course.library.ladder import r05_swizzle as r05
    from hgemm_course.library.ladder import r06_supertile as r06

    wide, tall = (128, 256), (256, 128)
    at = lambda t, tile: replace(t, bm=tile[0], bn=tile[1])            # noqa: E731
    return {("04", wide): sass.loop_schedule(r04.kernel(at(r04.TILES, wide), True)),
            ("04", tall): sass.loop_schedule(r04.kernel(at(r04.TILES, tall), True)),
            ("05", tall): sass.loop_schedule(r05.kernel(at(r05.TILES, tall), True)),
            ("05", wide): sass.loop_schedule(r05.kernel(at(r05.TILES, wide), True)),
            ("06", tall): sass.loop_schedule(r06.kernel_for(8192, 8192, 8192))}


def test_every_mma_sync_rung_loop_issues_a_slice_of_mma_sync(schedules):
    for loop in schedules.values():
        assert loop.counts["HMMA"] == 128 and loop.counts["LDSM"] == 32 and loop.counts["BAR"] == 1


def test_the_copies_leave_no_index_arithmetic_in_the_loop(schedules):
    """Chapter 04: each thread's copy addresses are worked out before the k-loop, which took rung 05's main loop
    from 349 to 318 instructions and rung 04's from 320 to 269 (NVRTC 13.0, the H200's; 13.5 gives the same within
    a few) and cut their SM cycles by 3-7% on the H200. A loop that grows back past 320 instructions has index
    arithmetic in it again, and chapter 04's figures must be measured again."""
    for key, loop in schedules.items():
        assert loop.instructions <= 320, (key, loop.instructions)


def test_sass_command_reads_a_rung_at_another_tile(capsys):
    assert main(["sass", "05", "--tiles", "128x256"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("k05_swizzle<128, 256, 64, 64, 64, 4, true>: main loop of") and "mma.sync after" in out
    assert main(["sass", "cublas"]) == 2
    assert "reads the rungs' kernels" in capsys.readouterr().err
