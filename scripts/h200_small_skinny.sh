#!/usr/bin/env bash
# gemm() on the shapes users bring, against the faster vendor library, through the device tool:
#   run(command="STEPS='host bench' bash scripts/h200_small_skinny.sh", carry=[".whl"])
# Steps (STEPS env): probe (research/vendor_probe.py's candidates at PROBE_SHAPES, recorded), host (the host's cost per call of gemm(out=), cupy.matmul, torch.matmul and the bare kernel,
# research/vendor_probe.py --host-only), bench (`bench plan` over benchmarks/shapes_small_skinny.txt, recorded),
# sanitize (compute-sanitizer on the plan's split and 64-row launches, on tails), tests (the GPU tests of stream-K
# and the API), profiles (ncu on gemm()'s launch and on cuBLASLt's GEMM kernel at each of PROFILE_SHAPES, by default
# small_skinny_profiles.profiled_shapes(), recorded),
# chapter (chapter 13 executed, into $OUT/notebooks). What lands in results/ comes back in $OUT/results.tgz.
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
OUT=${OUT:-$PWD/.device_out}
STEPS=${STEPS:-"host bench"}
mkdir -p "$OUT" results/logs
touch "$OUT/.started"
use_carried_wheels
hg() { python3 -m hgemm_course.course.cli "$@"; }
day=$(date -u +%Y-%m-%d)
if step host; then
  timeout "${HOST_SECONDS:-300}" python3 research/vendor_probe.py --host-only --out "results/tuning/$day/host_path" 2>&1 | tee "$OUT/host.txt" | grep -v "^ \{5,\}" | head -60
  status=$((status | PIPESTATUS[0]))
fi
if step probe; then    # the candidates at PROBE_SHAPES, recorded under results/tuning/<day>/PROBE_NAME
  timeout "${PROBE_SECONDS:-400}" python3 research/vendor_probe.py --skip-host --rounds "${PROBE_ROUNDS:-2}" --shapes $PROBE_SHAPES \
    --out "results/tuning/$day/${PROBE_NAME:-probe}" 2>&1 | tee "$OUT/probe.txt" | grep -v "^ \{5,\}" | tail -80
  status=$((status | PIPESTATUS[0]))
fi
if step bench; then
  # BENCH_EXTRA: shapes timed after the sweep's, such as shapes the plan's constants were not fitted on
  timeout "${BENCH_SECONDS:-560}" python3 -m hgemm_course.course.cli bench plan --shapes benchmarks/shapes_small_skinny.txt ${BENCH_EXTRA:-} \
    --repeats 20 --record 2>&1 \
    | grep -v "^bench:" | tee "$OUT/bench.txt" | tail -60
  status=$((status | PIPESTATUS[0]))
fi
if step profiles; then
  # default: the newest sweep's shapes under 90% of the faster vendor, then chapter 13's other profiled ones
  default_shapes=$(python3 -c "from hgemm_course import viz
from hgemm_course.course.small_skinny_profiles import profiled_shapes
print(' '.join('x'.join(map(str, s)) for s in profiled_shapes(viz.vendor_sweep_data())))")
  for shape in ${PROFILE_SHAPES:-$default_shapes}; do
    for target in plan cublaslt; do
      timeout 120 python3 -m hgemm_course.course.cli profile $target --shape "$shape" --record 2>&1 | tail -4 | tee -a "$OUT/profiles.txt"
      status=$((status | PIPESTATUS[0]))
    done
  done
  python3 -m hgemm_course.course.cli profiles plan cublaslt 2>&1 | tee -a "$OUT/profiles.txt" | tail -20
fi
if step sanitize; then
  for tool in memcheck racecheck synccheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m hgemm_course.course.cli verify plan \
      --sizes ${SANITIZE_SIZES:-200x136x20000 256x256x65536 384x768x24576 100x1000x9992 512x512x16384 32x4096x14336 16x4096x4096 1536x1536x1536} > "$OUT/sanitize_$tool.txt" 2>&1
    status=$((status | $?)); tail -2 "$OUT/sanitize_$tool.txt"
  done
fi
if step tests; then
  timeout "${TESTS_SECONDS:-300}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_streamk.py tests/test_streamk_apart.py tests/test_api.py tests/test_api_again.py tests/test_packed_launch.py tests/test_plan_row64.py \
    tests/test_vendor_baseline.py > "results/logs/pytest_gpu_small_skinny_$day.txt" 2>&1
  status=$((status | $?)); tail -3 "results/logs/pytest_gpu_small_skinny_$day.txt"
fi
if step chapter; then
  # nbclient, not nbconvert: the device's image has no jupyter command
  timeout 500 python3 -m hgemm_course.course.notebooks --out "$OUT/notebooks" chapters/13_small_skinny.ipynb 2>&1 | tail -3
  status=$((status | PIPESTATUS[0]))
fi
added=$(find results -type f -newer "$OUT/.started")
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200_small_skinny.sh finished with status $status"
exit $status
