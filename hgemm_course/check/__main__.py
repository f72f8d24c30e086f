"""The child process that checks a learner's Python file: ``python -m hgemm_course.check FD REQUEST``,
started by :func:`hgemm_course.check.child.run_in_child` (run ``hgemm-course check`` instead)."""
import sys

from .child import spawned_main

spawned_main(sys.argv[1:])
