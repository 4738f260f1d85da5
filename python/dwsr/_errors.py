"""dwsr's exceptions: the C++ library's errors, with its messages unchanged."""

from __future__ import annotations


class Error(Exception):
    """Base of every error dwsr reports (a bad value, a file, a memory budget)."""


class InvalidInputError(Error, ValueError):
    """A value given to dwsr is malformed or out of range: a shape, a parameter,
    an operator name, a graph, an array of the wrong type."""


class FileError(Error, OSError):
    """A file could not be read or written, or its contents are corrupt."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation would exceed a memory budget.

    Attributes:
        requested: bytes the failing allocation asked for.
        budget: the budget it would have exceeded, in bytes.
    """

    def __init__(self, message: str, requested: int = 0, budget: int = 0) -> None:
        super().__init__(message)
        self.requested = requested
        self.budget = budget


class CancelledError(Error):
    """A run stopped because it was asked to (Ctrl-C raises KeyboardInterrupt instead)."""
