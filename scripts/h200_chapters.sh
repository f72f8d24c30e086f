#!/usr/bin/env bash
# The chapters re-executed on the H200, with fresh records where they show them, through the device tool:
#   run(command="STEPS='records' bash scripts/h200_chapters.sh", carry=[".whl"])
#   run(command="STEPS='notebooks' NOTEBOOKS='chapters/0*.ipynb' bash scripts/h200_chapters.sh", carry=[".whl"])
# records: rungs 01-02 benched with their timing builds (recorded), and the GPU tests of the timing builds and of
# stream-K's guard. notebooks: NOTEBOOKS executed into $OUT/notebooks. New files under results/ come back in
# $OUT/results.tgz.
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUT=${OUT:-$PWD/.device_out}
NOTEBOOKS=${NOTEBOOKS:-chapters/*.ipynb}
mkdir -p "$OUT" results/logs
touch "$OUT/.started"
use_carried_wheels
if step records; then
  timeout 240 python3 -m hgemm_course.course.cli bench 01 02 --sizes 1024 2048 4096 --record 2>&1 | grep -v "^bench:" | tail -12
  status=$((status | PIPESTATUS[0]))
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cta_clock.py tests/test_cta_clock_numba.py \
    tests/test_streamk.py > results/logs/pytest_gpu_numba_clock_streamk_guard_20261202.txt 2>&1
  status=$((status | $?)); tail -3 results/logs/pytest_gpu_numba_clock_streamk_guard_20261202.txt
fi
if step notebooks; then
  # shellcheck disable=SC2086
  timeout 560 python3 -m hgemm_course.course.notebooks --out "$OUT/notebooks" $NOTEBOOKS 2>&1 | tail -20
  status=$((status | PIPESTATUS[0]))
fi
added=$(find results -type f -newer "$OUT/.started")
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200_chapters.sh finished with status $status"
exit $status
