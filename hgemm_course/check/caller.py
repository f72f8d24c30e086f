"""What the caller's process does around every check, Python or kernel: it imports the references the verdict is
computed from before any learner code runs (:func:`prepare`), accepts only time limits in
:data:`TIMEOUT_RANGE_S` (:func:`checked_timeout`), and holds its own work on what the children gave back to the
check's time (:func:`caller_time_limit`)."""
from __future__ import annotations

import contextlib
import importlib
import signal
import threading

from .feedback import Stopped

TIMEOUT_RANGE_S = (1, 3600)   # the time limits a check accepts


def prepare(draw: bool, imports: tuple[str, ...] = ()) -> None:
    """Import every module a checker and its picture use (and ``imports``, what one checker imports besides),
    before any learner code runs: the references
    the verdict is computed from are then the ones installed when the check started (a learner file that
    rewrites them is caught by :mod:`.watch`, and fails the check), and their Numba caches are sealed: this
    process loads no cache file learner code could have written (:func:`hgemm_course.sim.cache.seal`)."""
    import pkgutil

    from .. import sim
    from ..library import ladder
    from ..sim import cache

    importlib.import_module("numpy")
    for module in pkgutil.iter_modules(sim.__path__):
        importlib.import_module(f"hgemm_course.sim.{module.name}")
    cache.seal()
    ladder.registry()
    for name in imports:
        importlib.import_module(name)
    if draw:
        import io

        from matplotlib.figure import Figure

        importlib.import_module("matplotlib.patches")
        importlib.import_module("hgemm_course.viz.memory")
        figure = Figure(figsize=(1, 1))
        figure.subplots().set_title("0-9")
        figure.savefig(io.BytesIO(), format="png")   # what saving a picture imports, imported now


def checked_timeout(timeout: float | None, default: float) -> float:
    """``timeout`` (default ``default``) when it is a number of seconds in :data:`TIMEOUT_RANGE_S`; else a
    one-line ValueError that gives the range."""
    if timeout is None:
        return default
    low, high = TIMEOUT_RANGE_S
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        raise ValueError(f"The timeout must be a number of seconds from {low} to {high}, not {timeout!r}.") from None
    if not low <= value <= high:   # nan fails both comparisons
        raise ValueError(f"The timeout must be a positive number of seconds from {low} to {high}, "
                         f"not {timeout:g}.")
    return value


class OverTime(Stopped):
    """The checker's own work on the learner's answers ran past the check's time."""


@contextlib.contextmanager
def caller_time_limit(seconds: float):
    """Within the block, :class:`OverTime` once ``seconds`` have passed (in the main thread; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def over(_signum, _frame):
        raise OverTime(f"Checking your answers took the checker more than {seconds:g} s: what your code returned "
                       "(its size, its values) makes the checker's own work on it endless. Return what the exercise "
                       "asks for, of the size it asks; if it is only slow, give it longer: hgemm-course check "
                       "--timeout SECONDS.")

    before = signal.signal(signal.SIGALRM, over)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if before is None else before)
