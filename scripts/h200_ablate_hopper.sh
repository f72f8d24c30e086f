#!/usr/bin/env bash
# The Hopper ablations (research/ablate_hopper.py) and the L2-promotion ablation of rung 07, through the device
# tool:
#   run(command="STEPS='a' bash scripts/h200_ablate_hopper.sh", carry=[".whl"])     # 07_to_09 09_to_10 ring_depth
#   run(command="STEPS='b' bash scripts/h200_ablate_hopper.sh", carry=[".whl"])     # the other groups, L2, ncu
#   run(command="STEPS='c' bash scripts/h200_ablate_hopper.sh", carry=[".whl"])     # rung 07 moved to rung 09's settings one at a time
# What lands under results/tuning/2026-12-02/ comes back in $OUT/results.tgz.
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUT=${OUT:-$PWD/.device_out}
DAY=results/tuning/2026-12-02
mkdir -p "$OUT" "$DAY/ablate_hopper"
touch "$OUT/.started"
use_carried_wheels
probe() { timeout "$1" python3 research/ablate_hopper.py --out "$DAY/ablate_hopper" --groups "${@:2}" 2>&1 \
  | tee -a "$DAY/ablate_hopper/log.txt" | grep -v "^ *$" | tail -40; status=$((status | PIPESTATUS[0])); }
if step a; then
  probe 560 07_to_09 09_to_10 ring_depth
fi
if step c; then
  probe 300 07_settings
fi
if step b; then
  probe 300 tile_width wait_unroll 10_to_11
  timeout 150 python3 research/ablate_l2_promotion.py --out "$DAY/l2_promotion" --sizes 4096 8192 --ncu-size 8192 \
    2>&1 | tail -6; status=$((status | PIPESTATUS[0]))
  # where rung 09's warps wait: ncu's per-instruction stall samples of one 4096^3 launch
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  timeout 120 "$ncu" --clock-control none --section SourceCounters --section WarpStateStats -k regex:^k09 \
    --launch-skip 1 --launch-count 1 -f -o "$OUT/k09_source" python3 research/ablate_hopper.py \
    --launch "07_to_09/09 wgmma" --size 4096 > "$OUT/ncu_k09.log" 2>&1; tail -3 "$OUT/ncu_k09.log"
  "$ncu" --import "$OUT/k09_source.ncu-rep" --page source --csv --print-source sass \
    > "$DAY/ablate_hopper/ncu_k09_source_sass_4096.csv" 2> "$OUT/ncu_k09_import.log"
  tail -2 "$OUT/ncu_k09_import.log"; wc -l "$DAY/ablate_hopper/ncu_k09_source_sass_4096.csv"
fi
added=$(find results -type f -newer "$OUT/.started")
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200_ablate_hopper.sh finished with status $status"
exit $status
