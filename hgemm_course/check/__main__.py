"""The child process that runs a learner's Python file for a check: ``python -P -m hgemm_course.check REQUEST``,
started under a supervisor by :func:`hgemm_course.check.python_exercise.run_in_child` (run ``hgemm-course check`` instead).
It only answers the checker's calls; the verdict is decided in the process that started it."""
import sys

from .child import spawned_main

spawned_main(sys.argv[1:])
