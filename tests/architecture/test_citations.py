"""The house stays true: every repository path and docs section the docs and the code cite exists,
and no comment names an issue of the tracker (it is not in the repository: cite the docs section).

Scanned: the Markdown (README.md, docs/*.md, every README.md under tests/); every .py under
harness/, adapters/, benchmarks/ and sets/ (help texts and messages cite docs too), and the comments
and docstrings of those under tests/ (where a path in a code string is test data, not a citation);
the project's configuration (pyproject.toml, .ci/, .akurai.yml).

A citation is a path whose first folder is one of the repository's (`harness/`, `docs/`, ...), one
of `harness/` (docs/design.md's map names modules from there: `report/html.py`) or one of `tests/`
(tests/README.md names its groups from there: `unit/sets`), resolved against those; a Markdown
link's target, resolved against the linking file's folder as a browser does; or a bare `test_*.py`,
which must sit beside the file naming it (else cite its path). A module may be cited without `.py`
and with a name defined in it (`report/document.Report`). A section is cited as
`docs/sets.md#evidence` or, in code, `(docs/sets.md, "Evidence")` (`(README.md, "Exit codes")`):
either must name a heading of that file.

Not citations: URLs, absolute and home paths (`/usr/bin/time`, `~/beir`), the user's own folder
(`./my-adapter`), patterns and placeholders (`*`, `<kind>`, `{a,b}`, `$VAR`, an all-capitals
segment as in `sets/NAME/`), and the deliberate examples in EXAMPLES, each with its reason.
"""

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from tests.conftest import REPO_ROOT

HARNESS = REPO_ROOT / "harness"
TESTS = REPO_ROOT / "tests"
# A citation's first folder -> the folders it is resolved against.
ROOTS = {
    **{name: (REPO_ROOT,) for name in ("harness", "adapters", "benchmarks", "tests", "docs", "baselines", ".ci")},
    "sets": (REPO_ROOT, HARNESS),  # the shipped sets, or the harness package that loads them
    **{name: (HARNESS,) for name in ("adapter", "scoring", "gating", "report", "commands", "history")},
    **{name: (TESTS,) for name in ("unit", "contract", "properties", "architecture", "fixtures", "gold")},
}
PYTHON_FOLDERS = ("harness", "adapters", "benchmarks", "sets", "tests")
CONFIG_FILES = ("pyproject.toml", ".ci/run", ".ci/gate", ".akurai.yml")

# Deliberate examples that look like repository paths, each with why it is not one.
EXAMPLES = {
    "baselines/my-adapter.json": "README.md and harness/api.py: the baseline a team commits for its own adapter",
    "baselines/mine.json": "docs/design.md: the same, in the Python API's example",
    "baselines/.current.json.lock": "docs/security.md: the lock file beside a baseline, there only while it is written",
    "sets/scifact": "README.md: the set `sets import-beir` writes in its worked example",
    "sets/x/queries.jsonl": "harness/sets/fingerprint.py: an example of the message naming a changed file",
    "docs/s": "docs/performance.md: a rate, documents per second",
}

# A run of path characters holding a slash or `.md` (the lookahead skips every other word quickly).
TOKEN = re.compile(r"(?<![\w.~$<>*{}/-])(?=[\w.~$<>*{}/-]*(?:/|\.md))[\w.~$<>*{}/-]+(?:#[\w-]+)?")
LINK = re.compile(r"\]\(([^()\s]+)\)")
SECTION = re.compile(r',? "([^"]{1,100})"')  # after a cited .md: `(docs/sets.md, "Evidence")`
BARE_TEST = re.compile(r"(?<![\w./-])test_\w+\.py\b")
PLACEHOLDER = re.compile(r"[*<>{}$]|(?:^|/)[A-Z][A-Z_]*(?:/|$)")
ISSUE_TAG = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
HEADING = re.compile(r"^#{1,6} +(.+?)(?: +#+)? *$")
FENCE = re.compile(r"^ *(```|~~~)")


def scanned_files() -> list[Path]:
    files = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")), *sorted(TESTS.rglob("README.md"))]
    files += [REPO_ROOT / name for name in CONFIG_FILES if (REPO_ROOT / name).exists()]
    for folder in PYTHON_FOLDERS:
        files += sorted(path for path in (REPO_ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts)
    return files


def relative(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings (outside code blocks; a repeated one also as -1, -2...)."""
    found: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            name = slug(match.group(1))
            count = found.get(name, 0)
            found[name] = count + 1
            if count:
                found[f"{name}-{count}"] = 1
    return frozenset(found)


def defines(module: Path, name: str) -> bool:
    pattern = rf"^\s*(?:async\s+def|def|class)\s+{name}\b|^{name}\b\s*[:=]"
    return re.search(pattern, module.read_text(encoding="utf-8"), re.MULTILINE) is not None


def resolves(cited: str, bases, section: str | None = None) -> bool:
    """Whether `cited` exists under one of `bases`: a path (a .md maybe with #anchor or a quoted
    section), a module without .py, or `module.name`."""
    cited, _, anchor = cited.partition("#")
    anchor = anchor or (slug(section) if section else "")
    for base in bases:
        target = base / cited
        if target.exists():
            return not anchor or (target.suffix == ".md" and anchor in anchors(target))
        if anchor:
            continue
        if target.with_name(target.name + ".py").is_file():
            return True
        stem, dot, name = target.name.partition(".")
        module = target.with_name(stem + ".py")
        if dot and name.isidentifier() and module.is_file():
            return defines(module, name)
    return False


def citations(text: str, source: Path):
    """(offset, cited, resolved) for each repository path `text` cites."""
    for match in TOKEN.finditer(text):
        cited = match.group().rstrip(".")
        if cited.startswith(("/", "~", "./")) or PLACEHOLDER.search(cited) or cited in EXAMPLES:
            continue
        section = SECTION.match(text, match.end()) if cited.endswith(".md") else None
        title = re.sub(r"\s*\n\s*#?\s*", " ", section.group(1)) if section else None  # a section may wrap
        first = cited.split("/", 1)[0]
        if "/" in cited and first in ROOTS:
            bases = (*ROOTS[first], source.parent)
        elif "/" not in cited and ".md" in cited and (title or "#" in cited or cited == "README.md"):
            bases = (source.parent, REPO_ROOT)  # README.md with a section, or a sibling page in docs/
        else:
            continue
        yield match.start(), f'{cited}, "{title}"' if title else cited, resolves(cited, bases, title)
    for match in BARE_TEST.finditer(text):
        yield match.start(), match.group(), (source.parent / match.group()).is_file()
    if source.suffix == ".md":
        for match in LINK.finditer(text):
            target = match.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            if target.startswith("#"):
                yield match.start(1), target, target[1:] in anchors(source)
            else:
                yield match.start(1), target, resolves(target, (source.parent,))


@cache
def prose_spans(text: str) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """((line, column), (line, column)) from start to end of Python source's comments and docstrings
    (any string standing alone as a statement)."""
    spans = [(token.start, token.end)
             for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            spans.append(((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)))
    return tuple(spans)


def in_prose(path: Path, text: str, offset: int) -> tuple[bool, int]:
    """Whether an offset of a file is prose (all of every file but a test's Python; there, a comment
    or docstring), and its line. Only hits are placed, so most test files are never tokenized."""
    line = text.count("\n", 0, offset) + 1
    if path.suffix != ".py" or not path.is_relative_to(TESTS):
        return True, line
    place = (line, offset - text.rfind("\n", 0, offset) - 1)
    return any(start <= place < end for start, end in prose_spans(text)), line


@cache
def findings() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(stale citations, issue tags), each `file:line: what`."""
    stale, tags = [], []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        hits = [(offset, cited, stale) for offset, cited, exists in citations(text, path) if not exists]
        hits += [(match.start(), match.group(), tags) for match in ISSUE_TAG.finditer(text)]
        for offset, what, found in sorted(hits, key=lambda hit: hit[0]):
            prose, line = in_prose(path, text, offset)
            if prose:
                found.append(f"{relative(path)}:{line}: {what}")
    return tuple(stale), tuple(tags)


def test_every_cited_repository_path_exists():
    stale, _ = findings()
    assert not stale, "paths cited that do not exist:\n" + "\n".join(stale)


def test_no_comment_or_doc_names_a_tracker_issue():
    _, tags = findings()
    assert not tags, "cite the docs section instead:\n" + "\n".join(tags)


def test_the_examples_are_cited_and_are_not_repository_paths():
    cited = {match.group().rstrip(".") for path in scanned_files() if path != Path(__file__).resolve()
             for match in TOKEN.finditer(path.read_text("utf-8"))}
    assert sorted(set(EXAMPLES) - cited) == []
    assert [example for example in EXAMPLES if (REPO_ROOT / example).exists()] == []


def test_the_rules_on_a_sample():
    source = REPO_ROOT / "docs" / "sample.md"  # not read: only its folder and suffix matter
    text = """
    found: harness/report/html.py, `report/document.Report`, scoring/metrics, unit/sets, sets/memory/set.json,
    docs/sets.md#evidence, (docs/sets.md, "Gate policy"), [sets](sets.md#judged-coverage), .ci/run, tests/gold/,
    (README.md, "Exit codes"), (docs/performance.md, "Metric speed, beside
    pytrec_eval, ir_measures and ranx").
    stale: tests/test_cli_translation.py, report/document.Nothing, docs/sets.md#nothing, (docs/sets.md, "Nothing"),
    (README.md, "Nothing"), [gone](gone.md), test_gates.py.
    not citations: ./my-adapter, ~/beir/scifact, /usr/bin/time, https://example.org/harness/x.py, sets/NAME/,
    $HARNESS_CORPUS_DIR/<kind>.jsonl, docs/*.md, shards/shard-1.json, baselines/my-adapter.json, docs/s indexed.
    """
    found = {cited: exists for _, cited, exists in citations(text, source)}
    assert {cited for cited, exists in found.items() if exists} == {
        "harness/report/html.py", "report/document.Report", "scoring/metrics", "unit/sets", "sets/memory/set.json",
        "docs/sets.md#evidence", 'docs/sets.md, "Gate policy"', "sets.md#judged-coverage", ".ci/run", "tests/gold/",
        'README.md, "Exit codes"', 'docs/performance.md, "Metric speed, beside pytrec_eval, ir_measures and ranx"'}
    assert {cited for cited, exists in found.items() if not exists} == {
        "tests/test_cli_translation.py", "report/document.Nothing", "docs/sets.md#nothing",
        'docs/sets.md, "Nothing"', 'README.md, "Nothing"', "gone.md", "test_gates.py"}


def test_in_tests_only_comments_and_docstrings_are_prose():
    text = '"""Docstring: a.md."""\nx = "data: b.md"  # comment: c.md\n\n\ndef f():\n    """d.md"""\n' \
           '    return "e.md"\n'
    names = ("a.md", "b.md", "c.md", "d.md", "e.md")
    in_a_test = {name: in_prose(TESTS / "module.py", text, text.index(name))[0] for name in names}
    assert in_a_test == {"a.md": True, "b.md": False, "c.md": True, "d.md": True, "e.md": False}
    assert all(in_prose(HARNESS / "module.py", text, text.index(name))[0] for name in names)
