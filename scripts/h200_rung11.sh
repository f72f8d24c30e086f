#!/usr/bin/env bash
# Rung 11 on the H200 through the device tool (carry .whl: scripts/fetch_h200_wheels.sh):
#   run(command="STEPS='verify sanitize ncu' bash scripts/h200_rung11.sh", carry=[".whl"])
#   run(command="STEPS=tune bash scripts/h200_rung11.sh", carry=[".whl"])
# verify:   research/verify_rung11_h200.py: every check (clusters of 2 included), then 10, 11 and 11 with
#           clusters timed in turn with cuBLAS at SIZES.
# sanitize: compute-sanitizer memcheck, racecheck and synccheck on rung 11 (default and clusters of 2).
# ncu:      one launch of rung 11 (default and clusters of 2) and of cuBLAS at NCU_SIZES under Nsight
#           Compute (--clock-control none): tensor pipe, stall reasons, L2 hit rate, DRAM throughput.
# ncu_cublas: the same for cuBLAS alone.
# bench:    hgemm-course bench BENCH_RUNGS (09 10 11) at BENCH_SIZES (1024 .. 8192), for README's table.
# tests:    the GPU tests of rung 11 and of the tuning sweep.
# notebooks: execute NOTEBOOKS (chapter 11) in place of a reader; the executed copies come back.
# tune:     hgemm-course tune 11 at SIZES (every configuration verified, then timed against cuBLAS).
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"   # set -uo pipefail, the repository root, step, $status
OUT=${OUT:-$PWD/.device_out}
STEPS=${STEPS:-"verify sanitize ncu"}
SIZES=${SIZES:-"2048 4096 8192"}
NCU_SIZES=${NCU_SIZES:-"4096 8192"}
mkdir -p "$OUT"
use_carried_wheels
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt"

if step verify; then
  # shellcheck disable=SC2086
  timeout 330 python3 research/verify_rung11_h200.py --out "$OUT" --sizes $SIZES --budget 320 > "$OUT/verify.txt" 2>&1
  status=$((status | $?)); tail -12 "$OUT/verify.txt"
fi
if step sanitize; then
  cat > /tmp/sanitize_r11.py <<'PY'
import dataclasses, functools
from hgemm_course.measurement.verification import verify
from hgemm_course.library.ladder import get, r11_persistent
from hgemm_course.library.ladder.r10_warp_specialized import WarpSpecializedTiles
for cluster in (1, 2):
    rung = dataclasses.replace(get("11"), launch=functools.partial(r11_persistent.launch, cluster_m=cluster))
    for shape in ((257, 136, 72), (256, 512, 128)):
        print(f"cluster {cluster}:", verify(rung, *shape).summary(), flush=True)
    rung = dataclasses.replace(rung, launch=functools.partial(r11_persistent.launch, cluster_m=cluster, max_ctas=2))
    print(f"cluster {cluster}, 2 CTAs:", verify(rung, 384, 512, 200).summary(), flush=True)
    one = WarpSpecializedTiles(64, 256, 64, 4)
    rung = dataclasses.replace(rung, launch=functools.partial(r11_persistent.launch, cluster_m=cluster, consumers=1,
                                                              tiles=one, max_ctas=2))
    print(f"cluster {cluster}, 1 consumer, 2 CTAs:", verify(rung, 257, 512, 136).summary(), flush=True)
PY
  for tool in memcheck racecheck synccheck; do
    echo "== $tool" >> "$OUT/sanitize.txt"
    extra=""; [[ $tool == memcheck ]] && extra="--report-api-errors no"
    # shellcheck disable=SC2086
    timeout 200 compute-sanitizer --tool $tool $extra python3 /tmp/sanitize_r11.py 2>&1 \
      | grep -E "cluster|SUMMARY|Error|error|Hazard|hazard|Invalid" | head -40 >> "$OUT/sanitize.txt"
  done
  cat "$OUT/sanitize.txt"
fi
if step ncu || step ncu_cublas; then
  ncu --query-metrics --chip gh100 2>/dev/null | grep -iE "gmma|pipe_tensor" > "$OUT/ncu_tensor_metrics.txt"
  sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --metrics sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second"
  for n in $NCU_SIZES; do
    if step ncu; then
      for cluster in 1 2; do
        # shellcheck disable=SC2086
        timeout 150 ncu --clock-control none -k regex:k11_persistent --launch-skip 1 --launch-count 1 $sections \
          --csv --page details python3 -m hgemm_course.measurement.profile_target --rung 11 --size "$n" --cluster $cluster \
          > "$OUT/ncu_r11_c${cluster}_$n.csv" 2> "$OUT/ncu_r11_c${cluster}_$n.err"
      done
    fi
    # cuBLAS's own kernel (cuBLAS 13 on sm_90 names its GEMMs nvjet_sm90_*): the third of three launches
    # shellcheck disable=SC2086
    timeout 150 ncu --clock-control none -k regex:"nvjet|gemm|xmma|cutlass" --launch-skip 2 --launch-count 1 $sections \
      --csv --page details \
      python3 -c "import cupy; n=$n; a=cupy.random.random((n,n)).astype(cupy.float16); b=cupy.random.random((n,n)).astype(cupy.float16); c=cupy.empty((n,n),cupy.float16); [cupy.matmul(a,b,out=c) for _ in range(3)]; cupy.cuda.runtime.deviceSynchronize()" \
      > "$OUT/ncu_cublas_$n.csv" 2> "$OUT/ncu_cublas_$n.err"
  done
  cd "$OUT" && tar czf ncu.tgz ncu_*.csv ncu_*.err ncu_tensor_metrics.txt && rm -f ncu_*.csv ncu_*.err ncu_tensor_metrics.txt; cd - > /dev/null
fi
if step bench; then
  # shellcheck disable=SC2086
  timeout 400 python3 -m hgemm_course.course.cli bench ${BENCH_RUNGS:-09 10 11} --sizes ${BENCH_SIZES:-1024 2048 4096 6144 8192} \
    --out-dir "$OUT" > "$OUT/bench.txt" 2> "$OUT/bench_log.txt"
  status=$((status | $?)); tail -20 "$OUT/bench.txt"
fi
if step tests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_hopper_ladder_gpu.py tests/test_tune.py -k "11 or tune" \
    > "$OUT/pytest_gpu.txt" 2>&1
  status=$((status | $?)); tail -3 "$OUT/pytest_gpu.txt"
fi
if step tune; then
  # shellcheck disable=SC2086
  timeout 560 python3 -m hgemm_course.course.cli tune 11 --sizes $SIZES --out-dir "$OUT" ${TUNE_ARGS:-} > "$OUT/tune.txt" 2> "$OUT/tune_log.txt"
  status=$((status | $?)); tail -40 "$OUT/tune.txt"; grep -v "it/s\|s/it" "$OUT/tune_log.txt" | tail -5
fi
if step notebooks; then
  # shellcheck disable=SC2086
  python3 -m hgemm_course.course.notebooks --out "$OUT" ${NOTEBOOKS:-chapters/11_persistent.ipynb} > "$OUT/notebooks.txt" 2>&1
  status=$((status | $?)); grep -v "IPKernelApp" "$OUT/notebooks.txt"
fi
echo "h200_rung11.sh finished with status $status"
exit $status
