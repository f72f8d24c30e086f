"""The format a Python exercise's child sends its answers in, and the caller reads them back in: JSON frames (a
4-byte length, then the body) of plain data that runs no code when it is read, with the limits on each
(:func:`encode`, :func:`decode`)."""
from __future__ import annotations

import itertools
import json
import numbers
import struct

from .feedback import Returned, ReturnedIterable

MAX_FRAME_BYTES = 16 << 20    # the largest message the child may send: one answer
MAX_TEXT = 2000               # characters kept of a text the child sends (a repr, an exception's message)
MAX_ITEMS = 1 << 20           # items the child reads from an iterable the learner returned
MAX_INT_BITS = 4096           # the widest int an answer may hold: wider ones are described, not sent
MAX_DEPTH = 32                # nesting the child encodes
PIPE_LOST = 121               # the child's exit status when its pipes to the parent are gone
HEADER = struct.Struct(">I")
_ARRAY_KINDS = "biuf"         # numpy dtypes an answer may have: bool, ints, floats


def encode(value, depth: int = 0):
    """``value`` as JSON data: None, bools, ints, floats and strings as themselves, lists as arrays,
    ``{"tuple": [...]}``, ``{"dict": [[k, v], ...]}``, ``{"ndarray": [...], "dtype": "int64"}`` (numeric
    dtypes), numpy scalars as Python numbers, and anything else as ``{"opaque": TYPE, "repr": TEXT}``, with
    ``"items"`` when it can be iterated (a generator, a set, a range)."""
    kind = type(value)
    if kind is int and value.bit_length() > MAX_INT_BITS:
        return {"opaque": "int", "repr": f"(an int of {value.bit_length()} bits, too long to read)"}
    if kind is int or kind is str or kind is bool or kind is float or value is None:
        return value
    if depth > MAX_DEPTH:
        return {"opaque": kind.__name__, "repr": "(nested too deep to read)"}
    if kind is tuple:
        return {"tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if type(value).__name__ == "bool_" or isinstance(value, bool):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return encode(int(value), depth)
    if isinstance(value, numbers.Real):
        return float(value)
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "kind", None) in tuple(_ARRAY_KINDS) and hasattr(value, "tolist") and getattr(value, "ndim", 0):
        return {"ndarray": value.tolist(), "dtype": str(dtype)}
    try:
        text = repr(value)[:MAX_TEXT]
    except Exception as exc:  # the learner's __repr__ raised
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    out = {"opaque": type(value).__name__, "repr": text}
    if hasattr(value, "__iter__") and not isinstance(value, (str, bytes, bytearray)):
        try:
            out["items"] = [encode(v, depth + 1) for v in itertools.islice(iter(value), MAX_ITEMS)]
        except Exception:  # an iterator that raises: not iterable, as far as the checker can tell
            pass
    return out


class Malformed(Exception):
    """What the child sent is not in the format."""


def decode(data, depth: int = 0):
    """The value :func:`encode` wrote; :class:`Malformed` for anything else."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if depth > MAX_DEPTH + 1:
        raise Malformed("nested too deep")
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is dict:
        keys = set(data)
        if keys == {"tuple"} and type(data["tuple"]) is list:
            return tuple(decode(v, depth + 1) for v in data["tuple"])
        if keys == {"dict"} and type(data["dict"]) is list:
            try:
                return {decode(k, depth + 1): decode(v, depth + 1) for k, v in data["dict"]}
            except (TypeError, ValueError) as exc:
                raise Malformed(f"a dict that cannot be rebuilt ({exc})") from None
        if keys == {"ndarray", "dtype"} and type(data["dtype"]) is str:
            import numpy as np

            try:
                dtype = np.dtype(data["dtype"])
                if dtype.kind not in _ARRAY_KINDS:
                    raise TypeError(f"dtype {dtype}")
                return np.asarray(data["ndarray"], dtype=dtype)
            except (TypeError, ValueError) as exc:
                raise Malformed(f"an array that cannot be rebuilt ({exc})") from None
        if {"opaque", "repr"} <= keys <= {"opaque", "repr", "items"} and type(data["opaque"]) is str \
                and type(data["repr"]) is str:
            name = data["opaque"] if data["opaque"].isidentifier() else "object"
            if "items" in data:
                if type(data["items"]) is not list:
                    raise Malformed("items that are not a list")
                kind = type(name, (ReturnedIterable,), {})
                return kind(data["repr"][:MAX_TEXT], [decode(v, depth + 1) for v in data["items"]])
            return type(name, (Returned,), {})(data["repr"][:MAX_TEXT])
    raise Malformed(f"{abbreviated(data)} is not a value in the checker's format")


def abbreviated(data, limit: int = 200) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def capped_text(value) -> str:
    """A text the child sent, capped; a non-text is malformed."""
    if type(value) is not str:
        raise Malformed(f"{abbreviated(value)} where a text belongs")
    return value[:MAX_TEXT]


def call_key(name: str, kwargs: dict) -> str:
    return f"{name}({kwargs!r}"


def framed(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return HEADER.pack(len(body)) + body
