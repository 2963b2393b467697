"""How text from outside (an adapter, a set, a baseline, a report read back) stays text in each output.

One home for the terminal and Markdown rules; every renderer and every print of such text uses them:
- terminal: `terminal_line` shows control characters escaped (`\\x1b`, `\\r`, `\\n`), so no
  adapter can set a title, clear the screen, move the cursor or start a line of its own;
  `terminal_block` keeps the text's line breaks and escapes the rest of each line.
- Markdown (GitHub's): `markdown_text` for text inside a line (constructs backslash-escaped, `<`,
  `>` and `&` as entities, URL autolinks broken, e-mail addresses and @mentions made inert by a
  word joiner after their `@`), `markdown_code` for a code span and
  `markdown_fence` for a fenced block, both delimited by a run of backticks longer than any
  inside. The terminal rule applies first, so a summary printed in a log is as safe.
XML (JUnit) text goes through `harness.fsutil.xml_safe`, HTML through `html_kit._text`.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, and the Unicode controls that move or reorder what a
# terminal shows (line and paragraph separators, bidirectional embeddings, overrides, isolates).
_CONTROLS = [*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029,
             *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TERMINAL = {code: ("\\n" if code == 0x0A else "\\r" if code == 0x0D
                    else f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _CONTROLS}
# Markdown: characters that open a construct (emphasis, strikethrough, links, images, code, tables,
# headings, math, escapes) are backslash-escaped; HTML's three as entities.
_MARKDOWN = {**{ord(c): "\\" + c for c in "\\`*~[]!|#$"}, ord("<"): "&lt;", ord(">"): "&gt;", ord("&"): "&amp;"}
# Escaped after the table: GFM's extended autolinks (`scheme://...`, `www.`) by an escape inside their
# trigger; `_` unless between two letters or digits, where it can neither open nor close emphasis
# (so `rank_before` stays readable).
_AFTER = re.compile(r"(?<=[A-Za-z]):(?=//)|(?i:(?<=www))\.|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_BACKTICKS = re.compile("`+")
# An `@` GitHub would make a mention (`@octocat`, `@org/team`: after no word character) or the middle of an
# e-mail address it links (`a@b.co`: a dotted domain after it) gets an invisible WORD JOINER after it, which
# neither GitHub's mentions nor cmark-gfm's address autolinks cross; `recall@10` is left as written.
_AT = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])|@(?=[A-Za-z0-9_-]+\\?\.[A-Za-z0-9])")
WORD_JOINER = "\u2060"


def terminal_line(text: str) -> str:
    """`text` as one line a terminal shows as is: controls (newlines too) escaped, tabs kept."""
    return text.translate(_TERMINAL)


def terminal_block(text: str) -> str:
    """`text`'s lines (split at `\\n` only), each escaped as by `terminal_line`."""
    return "\n".join(terminal_line(line) for line in text.split("\n"))


def markdown_text(text: str) -> str:
    """`text` inside a line of Markdown (a paragraph, list item, emphasis or table cell), rendered as
    exactly these characters (and a word joiner after an `@` that would mention or link): no link, image,
    HTML, heading, code, emphasis, mention or cell break."""
    escaped = _AFTER.sub(lambda m: "\\" + m.group(0), terminal_line(text).translate(_MARKDOWN))
    return _AT.sub("@" + WORD_JOINER, escaped)


def markdown_code(text: str) -> str:
    """An inline code span showing `text`: delimited by one backtick more than its longest run, padded
    with a space each side where the text would otherwise touch or lose one."""
    body = terminal_line(text) or " "  # no code span is empty: an empty text shows as one space
    fence = "`" * (_longest_backticks(body) + 1)
    if body.startswith("`") or body.endswith("`") or (body[:1] == " " == body[-1:] and body.strip(" ")):
        body = f" {body} "
    return f"{fence}{body}{fence}"


def markdown_fence(text: str, info: str = "text") -> list[str]:
    """A fenced code block of `text`'s lines (each escaped as by `terminal_line`): the opening line,
    the lines, the closing line; its fence is longer than any run of backticks inside."""
    lines = [terminal_line(line) for line in text.split("\n")]
    fence = "`" * max(3, _longest_backticks("\n".join(lines)) + 1)
    return [fence + info, *lines, fence]


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
