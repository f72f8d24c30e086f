"""``@cached_njit``: Numba's ``@njit(cache=True)``, rebuilt when a cache file cannot be read.

Numba keeps a compiled function in ``__pycache__/`` as an index (``NAME-LINE.pyXY.nbi``) and data files
(``NAME-LINE.pyXY.N.nbc``). A file cut short (a full disk, a process killed while it wrote) makes Numba's
unpickling fail on every later import, and so every plan and figure, until someone deletes it. Here such a
file is deleted with the function's other cache files, the function compiles afresh (and is cached again), and
one warning names the file.
"""
from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

from numba import njit


def cached_njit(**options):
    """``@njit(cache=True, **options)`` whose damaged cache files are deleted and rebuilt, with a warning."""
    def decorate(fn):
        dispatcher = njit(cache=True, **options)(fn)
        _rebuild_damaged(dispatcher)
        return dispatcher
    return decorate


def _rebuild_damaged(dispatcher) -> None:
    """Wrap the reads of the dispatcher's cache (Numba's IndexDataCacheFile): a file that does not unpickle reads
    as an empty cache once its function's files are gone."""
    files, fn = dispatcher._cache._cache_file, dispatcher.py_func
    load_index, load_data = files._load_index, files._load_data

    def rebuild(path: str, exc: Exception, empty):
        index = Path(files._index_path)
        for stale in [index, *index.parent.glob(index.name.removesuffix(".nbi") + ".*.nbc")]:
            with contextlib.suppress(OSError):
                stale.unlink()
        warnings.warn(f"Numba's cache file {path} could not be read ({type(exc).__name__}: {exc}); deleted the "
                      f"cache of {fn.__module__}.{fn.__qualname__} and compiled it afresh", stacklevel=2)
        return empty

    def read_index():
        try:
            return load_index()
        except Exception as exc:                # a truncated or garbled pickle raises anything from EOFError up
            return rebuild(files._index_path, exc, {})

    def read_data(name):
        try:
            return load_data(name)
        except FileNotFoundError:
            raise                               # Numba's own answer: compile, as for a file deleted under it
        except Exception as exc:
            return rebuild(files._data_path(name), exc, None)

    files._load_index, files._load_data = read_index, read_data
