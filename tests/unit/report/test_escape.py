"""The escaping rules of harness/report/escape.py, case by case (tests/properties/test_inert_text.py
feeds arbitrary text through every renderer that uses them)."""

import pytest

from harness.report.escape import markdown_code, markdown_fence, markdown_text, terminal_block, terminal_line
from tests.gfm import rendered


@pytest.mark.parametrize("text, shown", [
    ("\x1b]0;PWNED\x07title", "\\x1b]0;PWNED\\x07title"),       # sets the window title
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),                        # clears the screen
    ("\x1b[1A\x1b[2K\rPASSED", "\\x1b[1A\\x1b[2K\\rPASSED"),     # overwrites the line above
    ("a\nPASSED: 7 gates", "a\\nPASSED: 7 gates"),              # a line of its own
    ("\x9b31m\x85\x7f\x00", "\\x9b31m\\x85\\x7f\\x00"),          # C1 CSI and NEL, DEL, NUL
    ("\u202eevil\u2028", "\\u202eevil\\u2028"),                  # reordered text, a line separator
    ("tab\tand é 😀", "tab\tand é 😀"),                          # kept as is
])
def test_terminal_line_shows_controls_escaped(text, shown):
    assert terminal_line(text) == shown


def test_terminal_block_keeps_only_its_line_breaks():
    assert terminal_block("one\r\ntwo\x1b[K\n  | three") == "one\\r\ntwo\\x1b[K\n  | three"


@pytest.mark.parametrize("text", ["a``b", "`", "``x``", " `x` ", "`````", "", "  ", "<img src=x>", "a\nb", "|"])
def test_a_code_span_holds_any_text(text):
    code = rendered("x " + markdown_code(text)).find_all("code")
    assert len(code) == 1 and code[0].text() == (terminal_line(text) or " ")  # an empty span cannot be written


def test_a_code_span_is_one_backtick_longer_than_the_longest_run_inside():
    assert markdown_code("name``x") == "```name``x```"
    assert markdown_code("`x") == "`` `x ``"
    assert markdown_code("plain") == "`plain`"


def test_a_fence_is_longer_than_any_backtick_run_inside():
    assert markdown_fence("a\n`````\nb") == ["``````text", "a", "`````", "b", "``````"]
    assert markdown_fence("plain") == ["```text", "plain", "```"]
    page = rendered("\n".join(markdown_fence("`````\n### All gates passed\n```")))
    assert [e.tag for e in page.walk()] == ["root", "pre", "code"]


@pytest.mark.parametrize("text", [
    "![pixel](http://127.0.0.1/p.png)", "[login](http://127.0.0.1/)", "<img src=x>", "<h3>All gates passed</h3>",
    "\r### All gates passed", "**bold** _em_ ~~gone~~", "a | b", "www.example.com", "https://example.com/x",
    "$x^2$", "&lt;b&gt;", "\\[not a link\\]", "`code`", "rank_before and _emphasis_"])
def test_markdown_text_renders_as_exactly_its_characters(text):
    page = rendered("x " + markdown_text(text))
    assert [e.tag for e in page.walk()] == ["root", "p"]
    assert page.text().strip() == "x " + terminal_line(text)


def test_markdown_text_stays_readable():
    assert markdown_text("recall@10 dropped 20.00 points (rank_before)") == "recall@10 dropped 20.00 points (rank_before)"
    assert markdown_text("CI [-60.0, +0.0]") == "CI \\[-60.0, +0.0\\]"


@pytest.mark.parametrize("text", ["write to a@b.co now", "cc @octocat please", "ping @org/team", "(@someone)",
                                  "x.y+z@mail.example.org", "a@www.example.com"])
def test_addresses_and_mentions_are_inert_and_shown_as_written(text):
    markdown = markdown_text(text)
    page = rendered("x " + markdown)
    assert [e.tag for e in page.walk()] == ["root", "p"]  # no mailto: link
    assert page.text().strip().replace("\u2060", "") == "x " + text
    assert "@\u2060" in markdown  # the word joiner GitHub's mentions do not cross


def test_an_at_inside_a_word_is_left_as_written():
    assert markdown_text("recall@10 and ndcg@10 fell; P@5") == "recall@10 and ndcg@10 fell; P@5"
