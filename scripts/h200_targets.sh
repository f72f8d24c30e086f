#!/usr/bin/env bash
# Other GPUs' code on the H200, through the device tool:
#   run(command="bash scripts/h200_targets.sh", carry=[".whl"])      (fetch .whl first: scripts/fetch_h200_wheels.sh)
# Only an H200 is lent, so the configurations each rung takes on an A100 (sm_80), an RTX 3090 (sm_86), an RTX
# 4090 (sm_89) and an RTX 5080 (sm_120) run here as those GPUs would build them: sized for their shared memory
# and built as PTX for the oldest architecture the rung needs, which the driver JIT-compiles for sm_90
# (`--as`). Nothing here times them: their speed on their own GPUs is not measured by this run.
# Steps (STEPS env, default all): verify (rungs 03-07 on random inputs with M, N and K tails, each target,
# recorded under results/), sanitize (compute-sanitizer's memcheck, racecheck and synccheck on each distinct
# configuration), bench (rungs 03-07 and the plan at 4096^3 and 8192^3 on the H200's own configurations).
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"   # set -uo pipefail, the repository root, step, $status
OUT=${OUT:-$PWD/.device_out}
STEPS=${STEPS:-"verify sanitize bench"}
ARCHES=${ARCHES:-"sm_80 sm_86 sm_89 sm_120"}
SHAPES=${SHAPES:-"257x136x72 1000x1000x1000 384x520x4104 2048x2048x2048"}
# TOOLS: the sanitizer's tools to run (default: memcheck racecheck synccheck)
mkdir -p "$OUT"
touch "$OUT/.started"
use_carried_wheels
hg() { python3 -m hgemm_course.course.cli "$@"; }

if step verify; then
  for arch in $ARCHES; do
    echo "== --as $arch" | tee -a "$OUT/verify.txt"
    # shellcheck disable=SC2086
    hg doctor --arch "$arch" 2>&1 | tee -a "$OUT/verify.txt"
    # shellcheck disable=SC2086
    hg verify 03 04 05 06 07 --as "$arch" --sizes $SHAPES --record 2>&1 | tee -a "$OUT/verify.txt"
    rc=${PIPESTATUS[0]}
    [[ $rc -eq 1 ]] && status=1          # 2 is rung 07 refused on sm_80-sm_89: not a failure
  done
fi
if step sanitize; then
  # each distinct configuration once: sm_80's (163 KiB), sm_89's (99 KiB; sm_86's is the same), sm_120's rung 07
  for tool in ${TOOLS:-memcheck racecheck synccheck}; do
    for job in "sm_80 03 04 05 06" "sm_89 03 04 05 06" "sm_120 07"; do
      read -r arch rungs <<< "$job"
      log="$OUT/sanitize_${tool}_${arch}.txt"
      # shellcheck disable=SC2086
      timeout 300 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m hgemm_course.course.cli verify $rungs \
        --as "$arch" --sizes 200x136x136 256x256x128 > "$log" 2>&1
      status=$((status | $?)); echo "$tool $arch: $(tail -1 "$log")"
    done
  done
fi
if step bench; then
  hg bench 03 04 05 06 07 plan --sizes 4096 8192 --record 2>&1 | tee "$OUT/bench.txt"
  status=$((status | PIPESTATUS[0]))
fi
added=$(find results -type f -newer "$OUT/.started")
# shellcheck disable=SC2086
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200_targets.sh finished with status $status"
exit $status
