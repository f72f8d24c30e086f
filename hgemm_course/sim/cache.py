"""``@cached_njit``: Numba's ``@njit(cache=True)``, rebuilt when a cache file cannot be read.

Numba keeps a compiled function in ``__pycache__/`` as an index (``NAME-LINE.pyXY.nbi``) and data files
(``NAME-LINE.pyXY.N.nbc``). A file cut short (a full disk, a process killed while it wrote) makes Numba's
unpickling fail on every later import, and so every plan and figure, until someone deletes it. Here such a
file is deleted with the function's other cache files, the function compiles afresh (and is cached again), and
one warning names the file.

A cache file is a pickle, and unpickling runs code: a process that decides a check's verdict must load none
that learner code could have written. :func:`seal` (called before any learner code runs) records the digest of
every cache file of these functions; from then on this process loads a cache file only when its digest is one
it recorded or one of a file it wrote itself, and compiles afresh otherwise. With ``NUMBA_DISABLE_JIT=1``
the functions are plain Python, and there is no cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import pickle
import warnings
from pathlib import Path

from numba import njit

_DISPATCHERS: list = []
_TRUSTED: dict[str, str] = {}     # cache file -> digest it may be loaded with (while sealed)
_WRITTEN: dict[str, str] = {}     # cache file -> digest of what this process wrote there
_SEALED = [False]


def _read(path: str) -> tuple[bytes, str]:
    with open(path, "rb") as f:
        raw = f.read()
    return raw, hashlib.sha256(raw).hexdigest()


def _files_of(dispatcher) -> list[Path]:
    index = Path(dispatcher._cache._cache_file._index_path)
    return [index, *index.parent.glob(index.name.removesuffix(".nbi") + ".*.nbc")]


def seal() -> None:
    """From now on load only the cache files there are now (as they are now) and those this process writes."""
    if _SEALED[0]:
        return
    for dispatcher in _DISPATCHERS:
        for path in _files_of(dispatcher):
            with contextlib.suppress(OSError):
                _TRUSTED[str(path)] = _read(str(path))[1]
    _SEALED[0] = True


def wrote(path: str, digest: str | None) -> bool:
    """Whether this process wrote ``path`` with the content of that digest."""
    return digest is not None and _WRITTEN.get(str(path)) == digest


def cached_njit(**options):
    """``@njit(cache=True, **options)`` whose damaged cache files are deleted and rebuilt, with a warning."""
    def decorate(fn):
        dispatcher = njit(cache=True, **options)(fn)
        if hasattr(dispatcher, "_cache"):      # not under NUMBA_DISABLE_JIT=1
            _rebuild_damaged(dispatcher)
            _DISPATCHERS.append(dispatcher)
        return dispatcher
    return decorate


def _rebuild_damaged(dispatcher) -> None:
    """Wrap the reads of the dispatcher's cache (Numba's IndexDataCacheFile): a file that does not unpickle reads
    as an empty cache once its function's files are gone."""
    files, fn = dispatcher._cache._cache_file, dispatcher.py_func
    load_index, load_data, save_index, save_data = files._load_index, files._load_data, files._save_index, files._save_data

    def sealed_index():
        """Numba's _load_index, from the bytes whose digest was checked."""
        try:
            raw, digest = _read(files._index_path)
        except FileNotFoundError:
            return {}
        if _TRUSTED.get(files._index_path) != digest and _WRITTEN.get(files._index_path) != digest:
            return {}
        stream = io.BytesIO(raw)
        if pickle.load(stream) != files._version:
            return {}
        stamp, overloads = pickle.loads(stream.read())
        return overloads if stamp == files._source_stamp else {}

    def sealed_data(name):
        path = files._data_path(name)
        raw, digest = _read(path)
        if _TRUSTED.get(path) != digest and _WRITTEN.get(path) != digest:
            raise FileNotFoundError(path)       # Numba's answer to a missing file: compile
        return pickle.loads(raw)

    def note(path: str) -> None:
        with contextlib.suppress(OSError):
            _WRITTEN[path] = _read(path)[1]

    def write_index(overloads):
        save_index(overloads)
        note(files._index_path)

    def write_data(name, data):
        save_data(name, data)
        note(files._data_path(name))

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
            return sealed_index() if _SEALED[0] else load_index()
        except Exception as exc:                # a truncated or garbled pickle raises anything from EOFError up
            return rebuild(files._index_path, exc, {})

    def read_data(name):
        try:
            return sealed_data(name) if _SEALED[0] else load_data(name)
        except FileNotFoundError:
            raise                               # Numba's own answer: compile, as for a file deleted under it
        except Exception as exc:
            return rebuild(files._data_path(name), exc, None)

    files._load_index, files._load_data = read_index, read_data
    files._save_index, files._save_data = write_index, write_data
