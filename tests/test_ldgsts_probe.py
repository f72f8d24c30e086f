"""scripts/ldgsts_wavefronts.py on the CPU: the probe compiles, the plan is consistent, ncu's CSV parses."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

from hgemm_course.paths import REPO_ROOT

SCRIPT = Path(REPO_ROOT) / "scripts" / "ldgsts_wavefronts.py"
spec = importlib.util.spec_from_file_location("ldgsts_wavefronts", SCRIPT)
lw = importlib.util.module_from_spec(spec)
sys.modules["ldgsts_wavefronts"] = lw
spec.loader.exec_module(lw)


def test_probe_compiles_to_ldgsts():
    module = lw.compile_probe()
    assert lw.KERNEL_NAME in module.resources
    assert "cp.async.cg.shared.global" in module.ptx
    assert module.resources[lw.KERNEL_NAME].spills == 0


def test_plan_is_consistent():
    cfgs = lw.configs()
    names = [c.name for c in cfgs]
    assert len(names) == len(set(names)) and len(cfgs) <= 120
    for c in cfgs:
        assert c.iters <= 16 and c.threads % 32 == 0
        active = c.goff >= 0
        assert (c.soff[active] % 16 == 0).all() and (c.goff[active] % 16 == 0).all()
        assert int(c.goff.max()) + 16 <= lw.GLOBAL_BYTES and c.smem_bytes <= 48 * 1024
        s = c.soff[active]                              # no two lanes write the same shared chunk
        assert len(np.unique(s)) == s.size
    by = {c.name: c for c in cfgs}
    # the rungs' own copies: 64 + 32 instructions per CTA and k-step, 384 ideal wavefronts
    assert by["real_padA_cold"].expected_instructions() == 64 and by["real_padB_cold"].expected_instructions() == 32
    assert lw.ideal(by["real_padA_cold"]) + lw.ideal(by["real_padB_cold"]) == 384
    assert lw.segments_per_phase(by["real_swzA_cold"]) + lw.segments_per_phase(by["real_swzB_cold"]) == 384
    assert lw.segments_per_phase(by["real_padA_cold"]) + lw.segments_per_phase(by["real_padB_cold"]) == 720
    assert by["row8_s16_cold"].expected_instructions() == 1 and lw.ideal(by["row8_s16_cold"]) == 1


def test_dry_run_prints_the_plan():
    out = subprocess.run([sys.executable, str(SCRIPT), "--dry-run"], capture_output=True, text=True, check=True).stdout
    assert "real_padA_cold" in out and "--metrics" in out and f"regex:{lw.KERNEL_NAME}" in out


def test_parse_matches_rows_to_configs_in_order(tmp_path):
    cfgs = lw.configs()[:3]
    header = '"ID","Kernel Name",' + ",".join(f'"{m}"' for m in lw.METRICS)
    units = '"","",' + ",".join('""' for _ in lw.METRICS)
    rows = [f'"{i}","ldgsts_probe","{4 * c.expected_instructions() + i}","0","{c.expected_instructions()}","1","2"'
            for i, c in enumerate(cfgs)]
    csv_path = tmp_path / "ldgsts.csv"
    csv_path.write_text("\n".join(["==PROF== Connected", header, units, *rows]) + "\n")
    parsed = lw.read_rows(csv_path.read_text())
    assert [r[lw.INSTRUCTIONS] for r in parsed] == [c.expected_instructions() for c in cfgs]
    text = lw.table(lw.configs(), parsed)
    assert "real_padA_cold" in text and "(not profiled)" in text and "MISMATCH" not in text
    assert lw.parse(csv_path, tmp_path / "t.txt") == 0 and (tmp_path / "t.txt").read_text().startswith("  #")
