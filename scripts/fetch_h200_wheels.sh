#!/usr/bin/env bash
# Download, on a machine with internet, the wheels scripts/h200.sh installs on the H200 (which has none):
# numpy 2.4.x (numba-cuda 0.30 fails with the image's numpy 2.5), what nbval needs to run notebooks, and
# hatchling and the wheels of pyproject.toml's cu13 extra that the image lacks (the crt headers, nvdisasm), to
# install the package into a fresh venv there (scripts/h200.sh's venv step) and read SASS in the notebooks.
# Usage: bash scripts/fetch_h200_wheels.sh   (writes .whl/, which git ignores; carry it with the device tool)
# shellcheck source=scripts/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"   # set -uo pipefail, the repository root, step, $status
set -e                                    # a wheel that does not download ends the run
plat=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
pkgs=(numpy==2.4.6 nbval nbformat nbclient ipykernel jupyter_client jupyter_core traitlets pyzmq tornado comm
      debugpy ipython ipython_pygments_lexers matplotlib-inline nest_asyncio fastjsonschema jsonschema
      jsonschema-specifications referencing rpds-py attrs platformdirs prompt_toolkit wcwidth jedi parso decorator
      pexpect ptyprocess stack_data executing asttokens pure_eval
      hatchling packaging pathspec pluggy trove-classifiers tomlkit editables nvidia-cuda-crt==13.0.88
      "nvidia-cuda-nvdisasm<14")
python3 -m pip download --no-deps -q -d .whl "${plat[@]}" "${pkgs[@]}"
ls .whl
