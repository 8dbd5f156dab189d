"""What the command lines share: their usage error and argument types.

argparse reports a type's ``ArgumentTypeError`` as ``argument --budget: <message>``, on one
line, with exit status 2, which is what every user error of the command line must give.
"""

from __future__ import annotations

import argparse

from .arguments import MOST

__all__ = ["UsageError", "non_negative_int", "positive_int"]


class UsageError(Exception):
    """A user error of the command line: printed on one line, exit status 2."""


def _int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value > MOST:  # the library refuses it too, but without the option's name
        raise argparse.ArgumentTypeError(f"expected {what} up to 2**53, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    value = _int(text, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An argument that must be a whole number of at least 0."""
    value = _int(text, "a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value
