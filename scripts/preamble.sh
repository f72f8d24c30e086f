# preamble.sh: how every run book in scripts/ starts. Each sources it first:
#   source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"
# - An unset variable and a failed stage of a pipe are errors (set -uo pipefail). A failing step does not end
#   a run book (no -e): it ORs the step's exit status into $status and exits with that at the end.
# - The working directory is the repository root, wherever the run book was started from.
# - step NAME: whether NAME is one of the run book's $STEPS.
# - use_carried_wheels: the run books that run the package on the H200 (which reaches no registry) call it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
status=0
step() { [[ " $STEPS " == *" $1 "* ]]; }

# The wheels carried in .whl/ (scripts/fetch_h200_wheels.sh), when there are any, installed offline into
# /tmp/site ahead of the image's packages on PYTHONPATH and PATH; the repository itself goes first on
# PYTHONPATH. Then a warning, not a stop, when the numpy found is outside pyproject.toml's pin (below 2.5:
# numba-cuda 0.30 fails at kernel launch with the image's numpy 2.5).
use_carried_wheels() {
  if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
  fi
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
  python3 -c "import numpy, sys
if tuple(int(p) for p in numpy.__version__.split('.')[:2]) >= (2, 5):
    sys.exit(f'warning: numpy {numpy.__version__} is not below 2.5 (pyproject.toml): numba-cuda 0.30 fails at '
             'kernel launch; carry .whl/ (scripts/fetch_h200_wheels.sh)')" || true
}
