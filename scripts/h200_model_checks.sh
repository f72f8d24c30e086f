#!/usr/bin/env bash
# Check the simulators against the H200 (DESIGN.md section 4): occupancy, shared-memory banks, L2.
# From the repository root on the H200, with PYTHONPATH=$PWD (and the wheels) set by the caller:
#   OUT=/path/to/out bash scripts/h200_model_checks.sh
# Steps (STEPS env, default all): occupancy banks l2 compare. Sizes: BANK_SIZE (2048), L2_SIZE (8192).
# ncu never changes clocks (--clock-control none) and flushes the caches before every replay pass
# (--cache-control all), so each pass starts from a cold L2, as the L2 model does.
# Leaves in $OUT: occupancy_check.json, model_banks_*.json, model_l2_*.json and ncu.tgz, which holds
# ncu/<config>.csv (raw CSV of each run), <config>.log (the program's output), plan.tsv, doctor.json and
# the metric probes; compare again anywhere with
#   tar xzf ncu.tgz && python3 -m hgemm_course.measurement.model_checks --ncu-dir ncu --out results/
# (KEEP_NCU_DIR=1 leaves the folder unpacked too).
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"   # set -uo pipefail, the repository root, step, $status
OUT=${OUT:?set OUT to the folder the results go to}
STEPS=${STEPS:-"occupancy banks l2 compare"}
BANK_SIZE=${BANK_SIZE:-2048}
L2_SIZE=${L2_SIZE:-8192}
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | tail -1)}
D=$OUT/ncu
export PYTHONUNBUFFERED=1
mkdir -p "$D"
log() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }

# Counters every run collects: names this ncu accepted on the H200 before (results/tuning) or in
# every Nsight Compute release since 2020. The extras are kept only if this ncu lists them
# (--query-metrics) or a one-metric probe on a tiny CuPy kernel accepts them, so a name this
# version lacks costs one probe, not the run.
BANK_CORE=(
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
  sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed lts__t_sector_hit_rate.pct dram__bytes_read.sum
  gpu__time_duration.sum
)
BANK_EXTRA=(
  smsp__sass_inst_executed_op_ldsm.sum smsp__inst_executed_op_ldsm.sum
  smsp__sass_inst_executed_op_ldgsts.sum smsp__inst_executed_op_ldgsts.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum
  sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum
  sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum
  sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum
  sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum
  smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum
  smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum
  smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum
  smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum
  launch__registers_per_thread
)
L2_CORE=(
  lts__t_sector_hit_rate.pct dram__bytes_read.sum lts__t_sectors_srcunit_tex_op_read.sum gpu__time_duration.sum
)
L2_EXTRA=(
  lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum
  lts__t_sector_op_read_hit_rate.pct launch__registers_per_thread
)
NCU_COMMON=(--clock-control none --cache-control all --csv --page raw)

# One ncu run of one configuration: the second launch of the kernel whose name starts with $2 (the
# first is the warm-up); ncu's output to $D/<name>.csv, the program's to $D/<name>.log. Succeeds
# when the CSV has a header, a units row and a kernel row.
run_ncu() {
  local name=$1 kernel=$2 metrics=$3; shift 3
  local t0=$SECONDS
  "$NCU" "${NCU_COMMON[@]}" "${UNITS[@]}" -k "regex:^$kernel" --launch-skip 1 --launch-count 1 \
    --metrics "$metrics" --log-file "$D/$name.csv" \
    python3 -m hgemm_course.measurement.profile_target "$@" > "$D/$name.log" 2>&1 < /dev/null
  local rc=$? rows commas=${metrics//[^,]/}
  rows=$(cat "$D/$name.csv" 2>/dev/null | grep -c '^"')
  if grep -q '^"ID"' "$D/$name.csv" 2>/dev/null && (( rows >= 3 )); then
    (( rc == 0 )) || { log "  $name: the program exited $rc (a wrong result?): see $D/$name.log"; status=1; }
    log "  $name: $(( ${#commas} + 1 )) metrics in $(( SECONDS - t0 ))s"
    return 0
  fi
  log "  $name: ncu gave no kernel row (exit $rc):" \
    "$(grep -h -m1 -E '==ERROR==|Error|error' "$D/$name.csv" "$D/$name.log" 2>/dev/null | head -1)"
  return 1
}

# Core + accepted extras; if that run gives nothing, once more with the core set and ncu's default units.
profile() {
  local name=$1 kernel=$2 core=$3 extras=$4; shift 4
  UNITS=(--print-units base)
  run_ncu "$name" "$kernel" "$core${extras:+,$extras}" "$@" && return 0
  mv "$D/$name.csv" "$D/$name.failed.txt" 2>/dev/null
  UNITS=()
  run_ncu "$name" "$kernel" "$core" "$@" && return 0
  status=1
}

# ncu accepts every metric of the comma-separated list $2 (probe name $1) on a tiny CuPy kernel.
probe() {
  "$NCU" "${NCU_COMMON[@]}" --launch-count 1 --metrics "$2" --log-file "$D/probe_$1.txt" \
    python3 -c "import cupy; (cupy.arange(4096) * 2).sum(); cupy.cuda.runtime.deviceSynchronize()" \
    > /dev/null 2>&1 < /dev/null || return 1
  ! grep -q '==ERROR==' "$D/probe_$1.txt" && grep -qF "\"${2##*,}\"" "$D/probe_$1.txt"
}

# The metrics of a list that this ncu accepts, comma-separated: those --query-metrics lists, and of
# the rest those a probe accepts. The rest are probed together; a metric ncu's error names is left
# out and the others probed again; an error that names none (or all) sends them one by one.
accepted() {
  local kind=$1 m out=() unlisted=() named keep; shift
  for m in "$@"; do
    if grep -qw -- "${m%%.*}" "$D/query_metrics.txt" 2>/dev/null; then out+=("$m"); else unlisted+=("$m"); fi
  done
  while (( ${#unlisted[@]} )); do
    if probe "${kind}_together" "$(commas "${unlisted[@]}")"; then
      out+=("${unlisted[@]}")
      break
    fi
    named=() keep=()
    for m in "${unlisted[@]}"; do
      if grep -qw -- "${m%%.*}" "$D/probe_${kind}_together.txt"; then named+=("$m"); else keep+=("$m"); fi
    done
    if (( ${#named[@]} == 0 || ${#keep[@]} == 0 )); then
      for m in "${unlisted[@]}"; do
        if probe "${m%%.*}" "$m"; then out+=("$m"); else log "  metric $m: not offered by this ncu, left out" >&2; fi
      done
      break
    fi
    for m in "${named[@]}"; do log "  metric $m: not offered by this ncu, left out" >&2; done
    unlisted=("${keep[@]}")
  done
  commas "${out[@]}"
}

commas() { local IFS=,; echo "$*"; }

log "model checks: OUT=$OUT steps='$STEPS' ncu=${NCU:-none}"
python3 -m hgemm_course.course.cli doctor --json > "$D/doctor.json" || status=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$D/nvidia_smi.csv" 2>/dev/null
date -u +%Y-%m-%dT%H:%M:%SZ > "$D/measured_at.txt"
python3 -m hgemm_course.measurement.model_checks --plan --bank-size "$BANK_SIZE" --l2-size "$L2_SIZE" > "$D/plan.tsv" || {
  log "hgemm_course.measurement.model_checks --plan failed"; exit 1; }
log "plan: $(wc -l < "$D/plan.tsv") configurations (no linear-layout variant exists: 03-04 pad, 05-07 swizzle)"

if step occupancy; then
  log "occupancy: sim.occupancy vs cuOccupancyMaxActiveBlocksPerMultiprocessor"
  python3 research/check_occupancy_h200.py --out "$OUT" || status=1
fi

if step banks || step l2; then
  if [[ -z $NCU ]]; then
    log "ncu not found (set NCU=/path/to/ncu): banks and l2 skipped"
    status=1
  else
    "$NCU" --version > "$D/ncu_version.txt" 2>&1
    "$NCU" --query-metrics > "$D/query_metrics.txt" 2>&1
    log "$(tail -1 "$D/ncu_version.txt"); --query-metrics lists $(grep -c '__' "$D/query_metrics.txt") metrics"
    bank_extra="" l2_extra=""
    step banks && bank_extra=$(accepted banks "${BANK_EXTRA[@]}")
    step l2 && l2_extra=$(accepted l2 "${L2_EXTRA[@]}")
    printf 'banks\t%s\nl2\t%s\n' "$bank_extra" "$l2_extra" > "$D/extra_metrics.tsv"
    log "extra metrics kept (see extra_metrics.tsv): banks $(wc -w <<< "${bank_extra//,/ }") of ${#BANK_EXTRA[@]}," \
      "l2 $(wc -w <<< "${l2_extra//,/ }") of ${#L2_EXTRA[@]}"
    while read -r name kind rung M N K sm sn kernel; do
      step "$kind" || continue
      args=(--rung "$rung" --mnk "$M" "$N" "$K")
      [[ $sm != - ]] && args+=(--super "$sm" "$sn")
      log "$kind: $name $kernel (${args[*]})"
      if [[ $kind == banks ]]; then
        profile "$name" "${kernel%%<*}" "$(commas "${BANK_CORE[@]}")" "$bank_extra" "${args[@]}"
      else
        profile "$name" "${kernel%%<*}" "$(commas "${L2_CORE[@]}")" "$l2_extra" "${args[@]}"
      fi
    done < "$D/plan.tsv"
  fi
fi

if step compare; then
  log "compare: models vs ncu"
  python3 -m hgemm_course.measurement.model_checks --ncu-dir "$D" --out "$OUT" || status=1
fi

if tar czf "$OUT/ncu.tgz" -C "$OUT" ncu; then
  [[ ${KEEP_NCU_DIR:-0} == 1 ]] || rm -rf "$D"
fi
log "h200_model_checks.sh finished with status $status"
exit $status
