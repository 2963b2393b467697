"""The house stays true: every repository path, docs section and module name the docs and the code
cite exists, and no comment names an issue of the tracker (it is not in the repository: cite the docs
section).

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
`docs/sets.md#evidence` or, in code, `(docs/sets.md, "Evidence")` (`(README.md, "In pytest")`):
either must name a heading of that file.

A name is cited as `module.name` (`api.load_inputs`, `harness.gate`, `gating.inputs.GateInputs`:
the first part a package of the repository, or a module or stage of harness/), as a path with a
name (`report/document.Report`), or beside its module in the house's two prose forms,
`` `fsutil.py` `file_sha256`, `write_output` `` and `` `EXIT_CODES` in `commands/arguments.py` ``.
It must be defined in that module (a name a module only imports lives elsewhere, unless its
`__all__` exports it; a package's `__init__` may re-export), each further part an attribute
(`layout.Layout.select`). A stage followed by a word that is none of its modules is a variable
(`report.exit_code`), not a citation. Names are read in the Markdown, and in the Python only in
comments and docstrings (code naming a name is checked by Python itself).

Not citations: URLs, absolute and home paths (`/usr/bin/time`, `~/beir`), the user's own folder
(`./my-adapter`), patterns and placeholders (`*`, `<kind>`, `{a,b}`, `$VAR`, an all-capitals
segment as in `sets/NAME/`), file names (`report.json`), and the deliberate examples in EXAMPLES,
each with its reason.
"""

import ast
import importlib
import importlib.util
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
    "adapters.NAME": "adapters/__init__.py: the module of any reference adapter",
    "harness.x.y": "tests/architecture/test_imports.py: any module's dotted name",
    "harness._shipped": "harness/shipped.py: the package the wheel's data is installed as (pyproject.toml)",
}

# A run of path characters holding a slash or `.md` (the lookahead skips every other word quickly).
TOKEN = re.compile(r"(?<![\w.~$<>*{}/-])(?=[\w.~$<>*{}/-]*(?:/|\.md))[\w.~$<>*{}/-]+(?:#[\w-]+)?")
LINK = re.compile(r"\]\(([^()\s]+)\)")
SECTION = re.compile(r',? "([^"]{1,100})"')  # after a cited .md: `(docs/sets.md, "Evidence")`
BARE_TEST = re.compile(r"(?<![\w./-])test_\w+\.py\b")
PLACEHOLDER = re.compile(r"[*<>{}$]|(?:^|/)[A-Z][A-Z_]*(?:/|$)")
ISSUE_TAG = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
HEADING = re.compile(r"^#{1,6} +(.+?)(?: +#+)? *$")
# Names: module.name[.attribute]; a module's path in code quotes followed by names in code quotes; name in path.
DOTTED = re.compile(r"(?<![\w.$/@:-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/-]|\.\w)")
PLACED = re.compile(r"`(?P<path>[\w/.-]+\.py)`(?P<names>(?:,? `[A-Za-z_][\w.]*(?:\(\))?`(?! in `))+)")
PLACED_BEFORE = re.compile(r"`(?P<name>[A-Za-z_][\w.]*?)(?:\(\))?` in `(?P<path>[\w/.-]+\.py)`")
NAME_ROOTS = ("harness", "adapters", "benchmarks", "tests")
FILE_SUFFIXES = frozenset("py md json jsonl toml txt yml yaml html xml tsv csv log lock run qrels whl gz sh".split())
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


def is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ImportError:  # a parent that is a module, not a package, or no such parent
        return False


@cache
def defined_names(source: Path) -> frozenset[str]:
    """The names a module's own top-level statements define, and those its `__all__` exports (not those it
    only imports)."""
    names: set[str] = set()
    body = list(ast.parse(source.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
            names |= bound
            if "__all__" in bound and isinstance(node.value, (ast.List, ast.Tuple)):
                names.update(item.value for item in node.value.elts if isinstance(item, ast.Constant))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            body += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                     *(statement for handler in getattr(node, "handlers", []) for statement in handler.body)]
    return frozenset(names)


@cache
def name_exists(dotted: str) -> bool:
    """Whether `package.module.name[.attribute...]` exists: the longest importable prefix is the module,
    the next part defined in it (a package's `__init__` may re-export), each further part an attribute
    (or a field a class declares)."""
    parts = dotted.split(".")
    cut = next((cut for cut in range(len(parts), 0, -1) if is_module(".".join(parts[:cut]))), 0)
    names = parts[cut:]
    if not cut or not names:
        return bool(cut)
    module = importlib.import_module(".".join(parts[:cut]))
    package = hasattr(module, "__path__")
    if not hasattr(module, names[0]) or not (package or names[0] in defined_names(Path(module.__file__))):
        return False
    found: object = module
    for position, name in enumerate(names):
        if not hasattr(found, name):
            fields = {field for kind in getattr(found, "__mro__", ()) for field in getattr(kind, "__annotations__", {})}
            return name in fields and position == len(names) - 1
        found = getattr(found, name)
    return True


def module_name(path: Path) -> str | None:
    """The dotted name a repository .py file is imported by, or None (not a module of the repository)."""
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    if path.suffix != ".py" or not all(part.isidentifier() for part in parts) or parts[0] not in NAME_ROOTS:
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def defines(module: Path, name: str) -> bool:
    """Whether a repository module defines `name` (`Class.attribute` included)."""
    dotted = module_name(module)
    return dotted is not None and name_exists(f"{dotted}.{name}")


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
        if dot and all(part.isidentifier() for part in name.split(".")) and module.is_file():
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
def cited_module(first: str, second: str) -> str | None:
    """The package a dotted citation starts from (`harness`, `adapters`...; `api` is `harness.api`), or
    None when it is no citation: a stage followed by a word that is not one of its modules
    (`report.exit_code` is a variable), or a word that is no module of ours (`json.loads`)."""
    if first in NAME_ROOTS:
        return ""
    if (HARNESS / first / "__init__.py").is_file():
        return "harness." if (HARNESS / first / f"{second}.py").is_file() else None
    return "harness." if (HARNESS / f"{first}.py").is_file() else None


def placed_module(cited: str, source: Path) -> Path | None:
    """The module file a `path.py` beside a name means, resolved as a path citation is."""
    first = cited.split("/", 1)[0]
    bases = (*ROOTS.get(first, ()), source.parent) if "/" in cited else (HARNESS, source.parent, REPO_ROOT)
    return next((base / cited for base in bases if (base / cited).is_file()), None)


def name_citations(text: str, source: Path):
    """(offset, cited, exists) for each name of a module `text` cites (see the module docstring)."""
    for match in DOTTED.finditer(text):
        parts = match.group().split(".")
        prefix = cited_module(parts[0], parts[1])
        if prefix is None or parts[-1] in FILE_SUFFIXES or match.group() in EXAMPLES:
            continue
        yield match.start(), match.group(), name_exists(prefix + match.group())
    placed = [(match.start(), match["path"], name) for match in PLACED.finditer(text)
              for name in re.findall(r"`([^`]+)`", match["names"])]
    placed += [(match.start(), match["path"], match["name"]) for match in PLACED_BEFORE.finditer(text)]
    for offset, path, name in placed:
        name = name.removesuffix("()")
        if name.split(".")[0] in NAME_ROOTS or name.rsplit(".", 1)[-1] in FILE_SUFFIXES:
            continue  # a dotted citation of its own (`harness.gate`), or a file of the list
        module = placed_module(path, source)
        yield offset, f"{path} {name}", module is not None and defines(module, name)


Span = tuple[tuple[int, int], tuple[int, int]]  # ((line, column), (line, column)), start to end


@cache
def docstring_spans(text: str) -> tuple[Span, ...]:
    """Python source's docstrings: any string standing alone as a statement."""
    spans, nodes = [], [ast.parse(text)]
    while nodes:
        node = nodes.pop()
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):  # statements hold statements
            for child in getattr(node, field, ()):
                if isinstance(child, ast.Expr) and isinstance(getattr(child.value, "value", None), str):
                    spans.append(((child.lineno, child.col_offset), (child.end_lineno, child.end_col_offset)))
                nodes.append(child)
    return tuple(spans)


@cache
def comment_spans(text: str) -> tuple[Span, ...]:
    return tuple((token.start, token.end) for token in tokenize.generate_tokens(io.StringIO(text).readline)
                 if token.type == tokenize.COMMENT)


def in_prose(path: Path, text: str, offset: int, code_counts: bool = True) -> tuple[bool, int]:
    """Whether an offset of a file is prose (all of a non-Python file; in Python, a comment or docstring,
    or anywhere outside tests/ when `code_counts`), and its line. Only hits are placed, and a file is
    tokenized only for a hit after a `#` on its line, so most files are never tokenized."""
    start_of_line = text.rfind("\n", 0, offset) + 1
    line = text.count("\n", 0, offset) + 1
    if path.suffix != ".py" or (code_counts and not path.is_relative_to(TESTS)):
        return True, line
    place = (line, offset - start_of_line)
    spans = docstring_spans(text) + (comment_spans(text) if "#" in text[start_of_line:offset] else ())
    return any(start <= place < end for start, end in spans), line


@cache
def findings() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(stale citations of paths, sections and names; issue tags), each `file:line: what`."""
    stale, tags = [], []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        hits = [(offset, cited, stale, True) for offset, cited, exists in citations(text, path) if not exists]
        if path.suffix in (".md", ".py"):
            hits += [(offset, name, stale, False) for offset, name, exists in name_citations(text, path) if not exists]
        hits += [(match.start(), match.group(), tags, True) for match in ISSUE_TAG.finditer(text)]
        for offset, what, found, code_counts in sorted(hits, key=lambda hit: hit[0]):
            prose, line = in_prose(path, text, offset, code_counts)
            if prose:
                found.append(f"{relative(path)}:{line}: {what}")
    return tuple(stale), tuple(tags)


def test_every_cited_repository_path_exists():
    stale, _ = findings()
    assert not stale, "paths, sections or names cited that do not exist:\n" + "\n".join(stale)


def test_no_comment_or_doc_names_a_tracker_issue():
    _, tags = findings()
    assert not tags, "cite the docs section instead:\n" + "\n".join(tags)


def test_the_examples_are_cited_and_are_not_repository_paths():
    cited = {match.group().rstrip(".") for path in scanned_files() if path != Path(__file__).resolve()
             for pattern in (TOKEN, DOTTED) for match in pattern.finditer(path.read_text("utf-8"))}
    assert sorted(set(EXAMPLES) - cited) == []
    assert [example for example in EXAMPLES if (REPO_ROOT / example).exists()] == []


def test_the_rules_on_a_sample():
    source = REPO_ROOT / "docs" / "sample.md"  # not read: only its folder and suffix matter
    text = """
    found: harness/report/html.py, `report/document.Report`, report/document.Report.to_json, scoring/metrics, unit/sets,
    sets/memory/set.json,
    docs/sets.md#evidence, (docs/sets.md, "Gate policy"), [sets](sets.md#judged-coverage), .ci/run, tests/gold/,
    (README.md, "In pytest"), (docs/performance.md, "Metric speed, beside
    pytrec_eval, ir_measures and ranx").
    stale: tests/test_cli_translation.py, report/document.Nothing, docs/sets.md#nothing, (docs/sets.md, "Nothing"),
    (README.md, "Nothing"), [gone](gone.md), test_gates.py.
    not citations: ./my-adapter, ~/beir/scifact, /usr/bin/time, https://example.org/harness/x.py, sets/NAME/,
    $HARNESS_CORPUS_DIR/<kind>.jsonl, docs/*.md, shards/shard-1.json, baselines/my-adapter.json, docs/s indexed.
    """
    found = {cited: exists for _, cited, exists in citations(text, source)}
    assert {cited for cited, exists in found.items() if exists} == {
        "harness/report/html.py", "report/document.Report", "report/document.Report.to_json", "scoring/metrics",
        "unit/sets", "sets/memory/set.json",
        "docs/sets.md#evidence", 'docs/sets.md, "Gate policy"', "sets.md#judged-coverage", ".ci/run", "tests/gold/",
        'README.md, "In pytest"', 'docs/performance.md, "Metric speed, beside pytrec_eval, ir_measures and ranx"'}
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


def test_the_name_rules_on_a_sample():
    source = REPO_ROOT / "docs" / "sample.md"  # not read: only its folder matters
    text = """
    found: `api.load_inputs`, harness.gate(...), `gating.inputs.GateInputs.query_sets` (a field),
    `layout.Layout.select`, `records.GateResult.metric`, `fsutil.py` `file_sha256`, `write_output`,
    `EXIT_CODES` in `commands/arguments.py`, scoring.metrics.RELEVANCE_LEVEL (its __all__ exports it),
    python -m adapters.bm25.
    stale: `api.no_such_function`, `layout.Layout.no_such_method`, gating.inputs.GateInputs.no_field,
    harness.adapter.nothing, `nowhere.py` `name`, `NO_SUCH` in `commands/arguments.py`,
    `sets/fingerprint.py` `file_sha256` (imported there, defined in fsutil).
    not citations: report.exit_code and sets.md (a variable, a file), json.loads, report.json, harness.x.y.
    """
    found = {cited: exists for _, cited, exists in name_citations(text, source)}
    assert {cited for cited, exists in found.items() if exists} == {
        "api.load_inputs", "harness.gate", "gating.inputs.GateInputs.query_sets", "layout.Layout.select",
        "records.GateResult.metric", "fsutil.py file_sha256", "fsutil.py write_output",
        "commands/arguments.py EXIT_CODES", "scoring.metrics.RELEVANCE_LEVEL", "adapters.bm25"}
    assert {cited for cited, exists in found.items() if not exists} == {
        "api.no_such_function", "layout.Layout.no_such_method", "gating.inputs.GateInputs.no_field",
        "harness.adapter.nothing", "nowhere.py name", "commands/arguments.py NO_SUCH",
        "sets/fingerprint.py file_sha256"}
