"""Launch one configuration of one rung a few times, for Nsight Compute to profile: the launch target of
:mod:`hgemm_course.profile`, under the name scripts/h200_model_checks.sh and scripts/h200_rung11.sh give ncu.

    python3 scripts/profile_target.py --rung 06 --size 8192 [--super 16 2] [--mnk M N K] [--cluster 2] [--launches 1]
    ncu -k regex:^k05_swizzle --launch-skip 1 --launch-count 1 ... python3 scripts/profile_target.py --rung 05

The same as ``python -m hgemm_course.profile``; ``hgemm-course profile RUNG`` runs ncu over it and records
the result. A wrong C exits 1; bad arguments exit 2 with a sentence naming the fix.
"""
import sys

from hgemm_course.profile import target_main as main

if __name__ == "__main__":
    sys.exit(main())
