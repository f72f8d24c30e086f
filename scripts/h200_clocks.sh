#!/usr/bin/env bash
# The timing build on the H200, through the device tool:
#   run(command="bash scripts/h200_clocks.sh", carry=[".whl", ".ablate"])
# Steps (STEPS env, default all): tests (the kernel-exercise attacks and the timing build's GPU tests), bench
# (rungs 03-07 with cycles and clock, recorded), ablate (chapter 04's step from rung 03 to 04, one change at a
# time; rung 07's L2 promotion), each with ncu counters. What lands in results/ comes back in $OUT/results.tgz.
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUT=${OUT:-$PWD/.device_out}
STEPS=${STEPS:-"tests bench ablate"}
mkdir -p "$OUT" results/tuning/2026-12-02
touch "$OUT/.started"
use_carried_wheels
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
if step tests; then
  timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_check_gpu_attacks.py tests/test_cta_clock.py \
    2>&1 | tee "$OUT/pytest_gpu.txt" | tail -5
  status=$((status | PIPESTATUS[0]))
fi
if step bench; then
  timeout 400 python3 -m hgemm_course.course.cli bench 03 04 05 06 07 --sizes 2048 4096 8192 --record 2>&1 \
    | grep -v "^bench:" | tee "$OUT/bench.txt" | tail -20
  status=$((status | PIPESTATUS[0]))
fi
if step ablate; then
  timeout 600 python3 research/ablate_03_to_04.py --out results/tuning/2026-12-02 --sizes 4096 8192 --ncu-size 8192 \
    2>&1 | tee results/tuning/2026-12-02/ablate_03_to_04_table.txt | tail -12
  status=$((status | PIPESTATUS[0]))
  timeout 300 python3 research/ablate_l2_promotion.py --out results/tuning/2026-12-02 --sizes 4096 8192 --ncu-size 8192 \
    2>&1 | tee results/tuning/2026-12-02/ablate_l2_promotion_table.txt | tail -4
  status=$((status | PIPESTATUS[0]))
fi
added=$(find results -type f -newer "$OUT/.started")
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200_clocks.sh finished with status $status"
exit $status
