"""The package's own exception, in a module of its own so that every layer can raise it without importing
the package's top level (which imports api.py)."""
from __future__ import annotations


class NoGPUError(RuntimeError, ValueError):
    """A rung needs a GPU (or a newer one) that this machine does not have."""
