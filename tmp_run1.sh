source scripts/preamble.sh
mkdir -p "$OUT"; touch /tmp/started
use_carried_wheels
hg() { python3 -m hgemm_course.cli "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_streamk.py -k paired 2>&1 | tail -2
for r in 04 05; do hg tune $r --tiles 256x128 128x256 --stages 4 --sizes 2048 4096 8192 --record 2>&1 | tail -12; done
for r in 06 07; do hg tune $r --tiles 256x128 128x256 --stages 4 --supers 8x4 --sizes 2048 4096 8192 --record 2>&1 | tail -12; done
hg tune 11 --tiles 128x256 128x128 256x128 --stages 4 --supers 16x2 --clusters 1 2 --consumers 2 --sizes 2048 --record 2>&1 | tail -12
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
find results -type f -newer /tmp/started -exec cp --parents {} "$OUT" \;
