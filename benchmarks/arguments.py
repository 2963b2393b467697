"""argparse types the benchmark scripts share: a bad number is argparse's one-line error and exit 2, never a traceback."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(minimum: int) -> Callable[[str], int]:
    """An integer option that must be `minimum` or more (`--limit 0` is refused, not run into a crash)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"  # argparse names the type in some messages
    return parse


def list_of(minimum: int) -> Callable[[str], list[int]]:
    """A comma-separated list of one or more integers, each `minimum` or more (`--sizes 20000,100000`)."""
    one = at_least(minimum)

    def parse(text: str) -> list[int]:
        values = [one(part.strip()) for part in text.split(",") if part.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of numbers, got {text!r}")
        return values
    parse.__name__ = f"list of integers >= {minimum}"
    return parse


def names_from(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """A comma-separated list of one or more of `choices` (`--graphs plain,fused`)."""
    def parse(text: str) -> list[str]:
        values = [part.strip() for part in text.split(",") if part.strip()]
        unknown = [value for value in values if value not in choices]
        if unknown or not values:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(choices)}, got {text!r}")
        return values
    parse.__name__ = f"list of {', '.join(choices)}"
    return parse
