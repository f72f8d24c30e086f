#!/usr/bin/env bash
# The course's run on the H200, from the repository root, through the device tool:
#   run(command="bash scripts/h200.sh", carry=[".whl"])       (fetch .whl first: scripts/fetch_h200_wheels.sh)
# Steps (STEPS env, default all): suite (what a change to the GPU path must pass before it is done: the main job
# twice, each in a fresh process on a machine that has run it, then the whole `pytest -m gpu tests` in one
# process with torch, each log kept under results/logs/, dated; the tours time SUITE_SIZES, default SIZES), doctor, ceilings, gpu tests, tour (the main job: every rung verified
# and timed at SIZES, with its plot), bench (RUNGS at SIZES), profiles (ncu on every tensor-core rung at
# PROFILE_SIZE, and rung 06 in row-major order), ablate (research/ablate_mma_feeding.py), limits (chapter
# 08's experiments), tune (a small `hgemm-course tune` sweep of each rung in TUNE_SWEEPS, one line of arguments
# per rung, at TUNE_SIZES), sanitize (compute-sanitizer on rungs 03-07 and rung 07's 2-CTA/SM tiles), notebooks,
# venv (a fresh venv installed offline with pyproject.toml's pins, then `pytest -m gpu` in it), api (gemm()
# against the bare kernel launch, research/api_vs_launch.py).
# Everything it writes goes under $OUT. The measuring steps pass --record (refused unless this is an H200 run
# with complete provenance), so their runs land in results/; at the end every file they added there comes back
# in $OUT/results.tgz, laid out as in the repository, to commit.
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"   # set -uo pipefail, the repository root, step, $status
OUT=${OUT:-$PWD/.device_out}
STEPS=${STEPS:-"doctor ceilings tests tour notebooks"}
SIZES=${SIZES:-"1024 2048 4096 8192"}
RUNGS=${RUNGS:-}
PYTEST_ARGS=${PYTEST_ARGS:-}
mkdir -p "$OUT"
touch "$OUT/.started"
use_carried_wheels                        # numpy 2.4 for numba-cuda; nbval and a kernel for the notebooks
hg() { python3 -m hgemm_course.course.cli "$@"; }

if step suite; then
  stamp=$(date -u +%Y%m%dT%H%M)
  mkdir -p results/logs
  for run in 1 2; do
    # shellcheck disable=SC2086
    hg tour --sizes ${SUITE_SIZES:-$SIZES} 2>&1 | tee "results/logs/suite_tour${run}_h200_$stamp.txt"
    status=$((status | PIPESTATUS[0]))
  done
  # the suite pairs gemm() with cuBLASLt too, so torch must import beside the package
  python3 -c "import hgemm_course.library.build, torch; print('torch', torch.__version__)" 2>&1 | tee "results/logs/suite_pytest_gpu_h200_$stamp.txt"
  status=$((status | PIPESTATUS[0]))
  python3 -m pytest -m gpu tests -q -p no:cacheprovider -rfEs 2>&1 | tee -a "results/logs/suite_pytest_gpu_h200_$stamp.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step doctor; then
  hg doctor 2>&1 | tee "$OUT/doctor.txt"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee -a "$OUT/doctor.txt"
fi
if step ceilings; then
  hg ceilings --record 2>&1 | tee "$OUT/ceilings.txt"
fi
if step tests; then
  # shellcheck disable=SC2086
  python3 -m pytest -m gpu tests -q -p no:cacheprovider ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest_gpu.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step venv; then
  # No registry here: the fresh venv takes the image's packages where they fit pyproject.toml's pins and
  # the carried wheels for the rest (numpy below the image's 2.5, hatchling, the NVRTC headers).
  # The image's python3 is itself a venv, so its packages reach the fresh venv through a .pth file, after the
  # fresh venv's own site-packages (where the carried numpy 2.4 then shadows the image's 2.5).
  rm -rf /tmp/venv && python3 -m venv /tmp/venv
  python3 -c "import site; print(site.getsitepackages()[0])" > /tmp/venv/lib/python3.12/site-packages/image.pth
  (unset PYTHONPATH
   /tmp/venv/bin/python -m pip install -q --no-index --find-links .whl hatchling editables &&
   /tmp/venv/bin/python -m pip install -q --no-index --find-links .whl --no-build-isolation -e . &&
   /tmp/venv/bin/python -m pip list 2>/dev/null | grep -E "^(numpy|numba|numba-cuda|cupy-cuda13x|hgemm-course) " &&
   /tmp/venv/bin/python -m pytest -m gpu tests -q -p no:cacheprovider) 2>&1 | tee "$OUT/venv.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step api; then
  python3 research/api_vs_launch.py --sizes 4096 8192 --out results 2>&1 | tee "$OUT/api.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step tour; then
  # shellcheck disable=SC2086
  hg tour --sizes $SIZES --record 2>&1 | tee "$OUT/tour.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step bench; then
  # shellcheck disable=SC2086
  hg bench $RUNGS --sizes $SIZES --record 2>&1 | tee "$OUT/bench.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step profiles; then
  for r in ${PROFILE_RUNGS:-03 04 05 06 07 09 10 11}; do
    hg profile "$r" --size "${PROFILE_SIZE:-8192}" --record 2>&1 | tee -a "$OUT/profiles.txt"
    status=$((status | PIPESTATUS[0]))
  done
  hg profile 06 --size "${PROFILE_SIZE:-8192}" --super 1 64 --record 2>&1 | tee -a "$OUT/profiles.txt"
fi
if step ablate; then
  python3 research/ablate_mma_feeding.py --out "$OUT" 2>&1 | tee "$OUT/ablate.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step limits; then
  hg limits --record 2>&1 | tee "$OUT/limits.txt"
  status=$((status | PIPESTATUS[0]))
fi
if step tune; then
  while read -r sweep; do
    # shellcheck disable=SC2086
    hg tune $sweep --sizes ${TUNE_SIZES:-4096 8192} --record 2>&1 | tee -a "$OUT/tune.txt"
    status=$((status | PIPESTATUS[0]))
  done <<< "${TUNE_SWEEPS:-"03 --tiles 256x128 128x256 --stages 3
04 --tiles 256x128 128x256 --stages 4
05 --tiles 256x128 --stages 3 4 5
06 --tiles 256x128 --stages 4 --supers 8x4 16x2 1x64
07 --tiles 256x128 128x256 --stages 4 --supers 8x4
09 --tiles 128x128 --stages 3 4 --supers 16x2
10 --tiles 128x256 256x128 --stages 4 --supers 16x2"}"
fi
if step sanitize; then
  for tool in memcheck racecheck synccheck; do
    # every mma.sync rung's default on a shape with M, N and K tails and on one of whole tiles
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 3 python3 -m hgemm_course.course.cli verify 03 04 05 06 07 \
      --sizes 200x136x136 256x512x128 > "$OUT/sanitize_$tool.txt" 2>&1
    status=$((status | $?)); tail -1 "$OUT/sanitize_$tool.txt"
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 3 python3 research/ablate_mma_feeding.py --verify-only \
      --only "07 now 128x128 2CTA/SM" > "$OUT/sanitize_${tool}_07_2cta.txt" 2>&1
    status=$((status | $?)); tail -1 "$OUT/sanitize_${tool}_07_2cta.txt"
  done
fi
if step notebooks; then
  touch "$OUT/.before_notebooks"
  python3 -m hgemm_course.course.notebooks --out "$OUT/notebooks" 2>&1 | tee "$OUT/notebooks.txt"
  status=$((status | PIPESTATUS[0]))
  # results a notebook measured (chapter 08's experiments, written to the notebooks' ./hgemm-results/)
  # come back with the notebooks
  find chapters/hgemm-results -maxdepth 1 -name '*.json' -newer "$OUT/.before_notebooks" \
    -exec cp {} "$OUT/notebooks/" \; 2>/dev/null
  tar czf "$OUT/notebooks.tgz" -C "$OUT" notebooks && rm -rf "$OUT/notebooks" "$OUT/.before_notebooks"
fi
# what the --record steps added to results/ comes back as one archive, $OUT/results.tgz (the device tool returns
# at most 8 files), to unpack in the repository root and commit
added=$(find results -type f -newer "$OUT/.started")
[[ -n "$added" ]] && tar czf "$OUT/results.tgz" $added
rm -f "$OUT/.started"
echo "h200.sh finished with status $status"
exit $status
