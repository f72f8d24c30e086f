"""Sizes and shapes as the command line and the figures take them: ``n`` (for n x n x n), ``MxNxK``, or a file of
them, one per line. argparse types: a bad one raises ``argparse.ArgumentTypeError`` naming the fix."""
from __future__ import annotations

import argparse
from pathlib import Path

MAX_SHAPES_FILE_BYTES = 1 << 20      # a file of shapes, one per line


def parse_size(text: str) -> tuple[int, int, int]:
    """argparse type: ``n`` (for n x n x n) or ``MxNxK``, every dimension at least 1."""
    try:
        dims = [int(p) for p in text.lower().replace("*", "x").split("x")]
    except ValueError:
        dims = []
    if len(dims) == 1:
        dims *= 3
    if len(dims) != 3 or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give n (for n x n x n) or MxNxK, each at least 1, "
                                         "e.g. 4096 or 1000x1000x64")
    return tuple(dims)


def _is(path: Path, question: str) -> bool:
    """``path.is_file()`` or ``path.exists()``, False for a name no file can have (too long, a loop of links)."""
    try:
        return getattr(path, question)()
    except OSError:
        return False


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """argparse type for --shapes: a size (``n`` or ``MxNxK``) or a file of them, one per line, where
    ``#`` starts a comment."""
    path = Path(text)
    if not _is(path, "is_file"):                 # a FIFO or a device is not read: it could block or never end
        try:
            return [parse_size(text)]
        except argparse.ArgumentTypeError:
            why = "not a file of shapes" if _is(path, "exists") else "no such file"
            if len(text) > 80:
                text = f"{text[:60]}... ({len(text)} characters)"
            raise argparse.ArgumentTypeError(f"{text!r}: {why}, nor a size; give a file of shapes (one n or MxNxK "
                                             "per line) or a size, e.g. 4096 or 4096x2048x8192") from None
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SHAPES_FILE_BYTES + 1)
        if len(data) > MAX_SHAPES_FILE_BYTES:
            raise ValueError(f"over {MAX_SHAPES_FILE_BYTES >> 20} MiB, more than a file of shapes holds")
        lines = data.decode().splitlines()
    except (OSError, ValueError) as e:           # unreadable, too big, or not text
        raise argparse.ArgumentTypeError(f"{path}: cannot read it as a file of shapes ({e}); give a text file with "
                                         "one n or MxNxK per line") from None
    shapes = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if line:
            try:
                shapes.append(parse_size(line))
            except argparse.ArgumentTypeError as e:
                raise argparse.ArgumentTypeError(f"{path}:{number}: {e}") from None
    if not shapes:
        raise argparse.ArgumentTypeError(f"{path}: holds no shape (one n or MxNxK per line)")
    return shapes


def shapes_text(shapes) -> str:
    """Shapes as the command line takes them: 1024 for 1024x1024x1024, else MxNxK."""
    return " ".join(str(M) if M == N == K else f"{M}x{N}x{K}" for M, N, K in shapes)


def as_shapes(sizes) -> list[tuple[int, int, int]]:
    """Sizes as bench and the vendor choice take them, ``n`` (for n x n x n) or (M, N, K), as (M, N, K) tuples."""
    return [(s, s, s) if isinstance(s, int) else tuple(s) for s in sizes]
