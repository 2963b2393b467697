"""Our Markdown as GitHub renders it (cmark-gfm through cmarkgfm), as a tree a test can inspect, and
`assert_valid_gfm`, the structural rules GitHub needs of it (no renderer needed).

Rendered with raw HTML kept (GitHub's sanitiser runs later and keeps tags such as <img>, <a>
and <h3>), so any HTML that got through the escaping is seen here as an element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from tests.conftest import require_module

VOID = {"img", "br", "hr", "input", "meta", "link", "source", "area", "base", "col", "embed", "param", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict = field(default_factory=dict)
    children: list = field(default_factory=list)  # Element or str

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def find_all(self, tag: str) -> list[Element]:
        return [e for e in self.walk() if e.tag == tag]

    def shape(self) -> list:
        """The element tree without its text: what hostile text must never change."""
        return [self.tag, [c.shape() for c in self.children if isinstance(c, Element)]]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("root")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs))
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)

    def handle_comment(self, data):
        self.stack[-1].children.append(Element("!--"))


def render(markdown: str) -> str:
    cmarkgfm = require_module("cmarkgfm")  # GitHub's Markdown renderer
    from cmarkgfm.cmark import Options
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def parse_html(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def rendered(markdown: str) -> Element:
    """The Markdown as GitHub renders it, parsed."""
    return parse_html(render(markdown))


def assert_valid_gfm(text: str) -> None:
    """What GitHub needs for our constructs: fences closed; every table row with its header's cell
    count and a delimiter row second; blank lines around <details> content so tables inside render."""
    lines = text.splitlines()
    fence = None
    table: list[str] = []
    for number, line in enumerate(lines + [""]):
        if fence is None and line.startswith("```"):
            fence = re.match("`+", line).group(0)  # closed by a line of at least as many backticks
            continue
        if fence is not None:
            if re.fullmatch(f"{fence}`* *", line):
                fence = None
            continue
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            cells = [len(re.split(r"(?<!\\)\|", row.strip())) - 2 for row in table]
            assert len(set(cells)) == 1, (table, cells)
            assert re.fullmatch(r"\|(-+:?\|)+", table[1]), table[1]
            assert number - len(table) == 0 or lines[number - len(table) - 1] == "", table[0]
            table = []
        if line.startswith("<details>"):
            assert lines[number + 1] == "", line
        if line == "</details>":
            assert lines[number - 1] == "", number
    assert fence is None, "unclosed code fence"
    assert sum(line.startswith("<details>") for line in lines) == lines.count("</details>")
