"""What a terminal can show: whether to colour (NO_COLOR, TERM=dumb, --color), the colours, the progress line.

One home for escape sequences: nothing else in harness/ writes `\\033[`. Colour follows
https://no-color.org: `NO_COLOR` set to any non-empty value turns it off in `auto` mode, as
does `TERM=dumb` or a stream that is not a terminal; `--color always|never` overrides all three.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO

COLOR_MODES = ("auto", "always", "never")
_RESET = "\033[0m"
_CODES = {"fail": "1;31", "warn": "33", "pass": "32", "dim": "2", "bold": "1"}
CLEAR_LINE = "\r\033[K"
# A dumb terminal gets whole lines, at most this often per set (a quarter of the way each time).
DUMB_PROGRESS_STEPS = 4
# Redrawing more often than this is flicker, not information.
REDRAW_SECONDS = 0.1


def is_dumb(environ: Mapping[str, str]) -> bool:
    """TERM=dumb (Emacs shells, some CI logs): no cursor movement, no colour."""
    return environ.get("TERM", "") == "dumb"


def wants_colour(mode: str, stream: TextIO, environ: Mapping[str, str]) -> bool:
    """`always` / `never` as given; `auto`: a terminal, NO_COLOR unset or empty, TERM not dumb."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if environ.get("NO_COLOR") or is_dumb(environ):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass(frozen=True, slots=True)
class Style:
    """Wraps text in SGR colour codes when `colour`, else returns it unchanged (the golden files' style)."""

    colour: bool = False

    def paint(self, role: str, text: str) -> str:
        if not self.colour or not text:
            return text
        return f"\033[{_CODES[role]}m{text}{_RESET}"

    def status(self, status: str) -> str:
        """PASS / WARN / FAIL, four characters wide, coloured by status."""
        return self.paint(status, status.upper())


PLAIN = Style(False)


def progress_text(set_name: str, done: int, total: int, elapsed: float) -> str:
    """`[set] 40/120 queries  12.5 q/s  ETA 6s`; rate and ETA appear once there is a rate to tell."""
    text = f"[{set_name}] {done}/{total} queries"
    if done > 0 and elapsed > 0:
        rate = done / elapsed
        text += f"  {rate:.1f} q/s" if rate < 100 else f"  {rate:.0f} q/s"
        if done < total:
            text += f"  ETA {duration_text((total - done) / rate)}"
        else:
            text += f"  in {duration_text(elapsed)}"
    return text


def duration_text(seconds: float) -> str:
    """`45s`, `6m05s`, `2h03m`: an ETA or an elapsed time, rounded to the second."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class ProgressLine:
    """The `progress(set_name, done, total)` callback of a run, drawn on `stream`.

    On a capable terminal one line is redrawn in place (`\\r` and erase-line); on a dumb one
    (`dumb=True`) whole lines are printed a quarter of the way through each set, with no escape
    sequence at all. `finish()` erases the live line so the report starts on a clean line.
    """

    def __init__(self, stream: TextIO, *, dumb: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.dumb, self.clock = stream, dumb, clock
        self._started: dict[str, float] = {}
        self._last_draw = float("-inf")
        self._drawn = False
        self._steps_shown: dict[str, int] = {}

    def __call__(self, set_name: str, done: int, total: int) -> None:
        now = self.clock()
        started = self._started.setdefault(set_name, now)
        text = progress_text(set_name, done, total, now - started)
        if self.dumb:
            step = DUMB_PROGRESS_STEPS * done // total if total else DUMB_PROGRESS_STEPS
            if step > self._steps_shown.get(set_name, 0):
                self._steps_shown[set_name] = step
                print(text, file=self.stream, flush=True)
            return
        if done == total or now - self._last_draw >= REDRAW_SECONDS:
            self._last_draw = now
            self._drawn = True
            print(CLEAR_LINE + text, end="", file=self.stream, flush=True)

    def finish(self) -> None:
        if self._drawn and not self.dumb:
            print(CLEAR_LINE, end="", file=self.stream, flush=True)
        self._drawn = False
