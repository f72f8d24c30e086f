#!/usr/bin/env bash
# Fresh records with each launch's cycles and clock, through the device tool:
#   run(command="bash scripts/h200_records.sh", carry=[".whl"])
# The timing build's GPU tests (every NVRTC rung), then bench of rungs 01-12 and chapter 08's experiments, all
# recorded; what lands in results/ comes back in $OUT/results.tgz.
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUT=${OUT:-$PWD/.device_out}
mkdir -p "$OUT" results/logs
touch "$OUT/.started"
use_carried_wheels
hg() { python3 -m hgemm_course.course.cli "$@"; }
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cta_clock.py tests/test_hopper_ladder_gpu.py \
  > results/logs/pytest_gpu_cta_clock_hopper_20261202.txt 2>&1
status=$((status | $?)); tail -2 results/logs/pytest_gpu_cta_clock_hopper_20261202.txt
for args in "01 02 --sizes 1024 2048 4096" "03 04 05 06 07 --sizes 1024" "09 10 11 12 --sizes 1024 2048 4096 8192"; do
  # shellcheck disable=SC2086
  timeout 300 python3 -m hgemm_course.course.cli bench $args --record 2>&1 | grep -v "^bench:" | tee -a "$OUT/bench.txt" | tail -20
  status=$((status | PIPESTATUS[0]))
done
timeout 300 python3 -m hgemm_course.course.cli limits --record 2>&1 | tail -12
status=$((status | PIPESTATUS[0]))
added=$(find results -type f -newer "$OUT/.started")
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200_records.sh finished with status $status"
exit $status
