"""`retrieval-gate init [DIR] [--install SPEC] [--adapter -- ARGV]`: a team's repository in one command, its
starter layout written, nothing overwritten.

Writes the config with every key and its default (the team's adapter when given), a tiny working set
whose README explains each field (only into a sets folder holding none of the team's, and never again
once a team deleted it: a team that replaced or removed it never sees it again), an empty baselines folder, the budgets and the gate policy with the
defaults spelled out (generated from the code's defaults, so they cannot drift), the CI jobs for the
gate with the line that installs this harness (a wheel file, a git URL or an index: `install_spec`),
and `.retrieval-gate/.gitignore`, so reports and logs are never committed. A file that exists is
kept as it is and reported "kept".
"""

from __future__ import annotations

import argparse
import os
import importlib.metadata
import json
import re
import shlex
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.commands.arguments import command_parser, parse_arguments, program_name, split_adapter_command
from harness.errors import EXIT_OK, UsageError
from harness.fsutil import write_new_text
from harness.gating.baseline import DEFAULT_BASELINE_PATH
from harness.gating.budgets import DEFAULT_BUDGETS_PATH, DEFAULT_P95_BUDGET_MS
from harness.gating.policy import DEFAULT_POLICY_FILE, GatePolicy
from harness.layout import CONFIG_FILE, CONFIG_KEYS, DEFAULT_SETS_DIR, read_config
from harness.sets.corpus import content_sha256
from harness.sets.loader import SET_FORMAT, sets_in
from harness.version import __version__

EXAMPLE = "example"
# A requirement an index serves: the distribution, optional extras, an optional version clause.
_INDEX_REQUIREMENT = re.compile(r"retrieval[-_.]gate(\[[A-Za-z0-9,_ -]*\])?(\s*(==|~=|>=|<=|!=|>|<)\s*[A-Za-z0-9.*+!-]+"
                                r"(\s*,\s*(==|~=|>=|<=|!=|>|<)\s*[A-Za-z0-9.*+!-]+)*)?")
# The starter set: a fictional app's help pages, and questions a user would ask of them.
DOCUMENTS = {
    "help-01": "Reset your password from the sign-in page: choose Forgot password and follow the emailed link.",
    "help-02": "Export your data as CSV from Settings, Account, Export; large exports arrive by email.",
    "help-03": "Two-factor authentication: enable it in Settings, Security, with an authenticator app.",
    "help-04": "Invoices are listed under Billing, History; each can be downloaded as a PDF.",
    "help-05": "Delete your account from Settings, Account, Delete; it is removed after 30 days.",
    "help-06": "Invite a teammate from Team, Members, Invite; they join once they accept the email.",
}
QUERIES: list[dict[str, Any]] = [
    {"qid": "example-01", "query": "how do I reset my password", "relevant": {"help-01": 1},
     "category": "account", "split": "development", "source": "synthetic"},
    {"qid": "example-02", "query": "download an invoice as pdf", "relevant": {"help-04": 1},
     "category": "billing", "split": "development", "source": "synthetic"},
    {"qid": "example-03", "query": "turn on two-factor authentication", "relevant": {"help-03": 1},
     "category": "account", "split": "held-out", "source": "synthetic"},
    {"qid": "example-04", "query": "export my data to csv", "relevant": {"help-02": 1},
     "category": "account", "split": "held-out", "source": "synthetic"},
    {"qid": "example-05", "query": "invite a teammate", "relevant": {"help-06": 1},
     "category": "team", "split": "development", "source": "synthetic"},
]
SET_README = """\
# The example set (written by `retrieval-gate init`)

A set is a folder: `set.json` (what the set is), `queries.jsonl` (one judged query a line) and its
corpus (`corpus.jsonl`, one `{"id", "text"}` document a line). Replace this one with yours; the
whole format is docs/sets.md of retrieval-gate.

set.json:
- `format`: the set format, 1.
- `name`: the set's name (`--set NAME`, baseline entries); a team's set with a shipped set's name shadows it.
- `kind`: the corpus an adapter searches: the harness gives it as `$HARNESS_CORPUS_DIR/<kind>.jsonl`
  and asks `{"kind": ..., "query": ..., "k": ...}`.
- `revision`: bump it when you change the judgments: a baseline of another revision is refused, never compared.
- `description`: one line, shown by `sets list`.
- `k`: how many ids to ask for per query.
- `corpus`: where the documents come from; `{"source": "jsonl", "path": "corpus.jsonl"}` is a file in this folder.
- `pins`: the content sha256 of every document a query names, so an edited document is caught;
  after an intended edit, `python -m harness sets pin NAME` records them again.

queries.jsonl (one object a line):
- `qid`: unique id; `query`: the text asked.
- `relevant`: `{document id: grade}`, grade 1 or more relevant, 0 judged not relevant.
- `category`: gated on its own too (a drop in one category fails); `split`: `development` (tune on it)
  or `held-out` (report on it); `source`: where the query came from (`synthetic`, `logs`, ...).

Check it: `python -m harness sets verify NAME`; record its baseline:
`python -m harness --set NAME --update-baseline`.
"""
BASELINES_README = """\
Baselines: `python -m harness --set all --update-baseline` writes current.json here; committing it accepts the numbers.
"""
DISTRIBUTION = "retrieval-gate"
BUILT_IN_EXTRA = "bm25"  # what the built-in BM25 backend needs; a team's own adapter brings its own dependencies
HISTORY = ".retrieval-gate/history.sqlite"  # each gated run appended (docs/history.md); kept from job to job
GATE = ("python -m harness --set all --out .retrieval-gate/report.json --summary .retrieval-gate/summary.md "
        f"--junit .retrieval-gate/junit.xml --history {HISTORY}")
# Everything a run writes lands in .retrieval-gate/ (reports, logs, tracebacks); this file keeps it out of git.
IGNORE = """\
# written by `retrieval-gate init`: the reports, logs and tracebacks runs write here are never committed
*
!.gitignore
"""
INSTALL_COMMENT = """\
# How CI installs retrieval-gate (docs/commands.md, "Installing it"): a wheel file committed to this
# repository (./ci/retrieval_gate-VERSION-py3-none-any.whl), a git URL (retrieval-gate @ git+https://...@TAG)
# or a version an index serves (retrieval-gate==VERSION, with PIP_INDEX_URL or PIP_EXTRA_INDEX_URL set).
"""


CI_FILES = (".akurai.yml", ".github/workflows/retrieval-gate.yml")


def akurai_job(install: str) -> str:
    return f"""\
# The retrieval gate (written by `retrieval-gate init`): gates every push against baselines/current.json.
# Each run is appended to {HISTORY}: restore it from the last job's artifact before the gate, and
# `python -m harness history` shows its series and change points (docs/history.md).
{INSTALL_COMMENT}jobs:
  retrieval-gate:
    on: [push, pull_request]
    steps:
      - run: python -m pip install {shlex.quote(install)}
      - run: {GATE}
    artifacts:
      - .retrieval-gate/
"""


def github_workflow(install: str) -> str:
    return f"""\
# The retrieval gate (written by `retrieval-gate init`): gates every push against baselines/current.json.
name: retrieval-gate
on: [push, pull_request]
jobs:
  retrieval-gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
{textwrap.indent(INSTALL_COMMENT, "      ")}      - name: Install retrieval-gate
        run: |
          python -m pip install {shlex.quote(install)}
      # the history of every gated run (docs/history.md): the newest saved store, kept as a new one after
      - uses: actions/cache@v4
        with:
          path: {HISTORY}
          key: retrieval-gate-history-${{{{ github.run_id }}}}
          restore-keys: retrieval-gate-history-
      # the backend gated is the config's (retrieval-gate.toml: adapter, else the built-in BM25);
      # --summary is also appended to the job's page ($GITHUB_STEP_SUMMARY)
      - name: Gate
        run: {GATE}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: retrieval-gate
          path: .retrieval-gate/
"""


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "init", "Write a starter layout into a team's repository: retrieval-gate.toml (every key, commented, "
                "with its default; the team's adapter when given), an example set (only into a sets folder holding "
                "none of the team's), an empty baselines folder, budgets.json, gate-policy.json (the defaults "
                "spelled out), the CI jobs (.akurai.yml, GitHub Actions) and .retrieval-gate/.gitignore. Never "
                "overwrites: a file that exists is kept.")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("."),
                        help="the team's repository (default: the working folder; created if missing)")
    parser.add_argument("--install", default=None, metavar="SPEC",
                        help="how the CI jobs install retrieval-gate: a wheel file in the repository (./ci/retrieval_"
                             "gate-0.4.0-py3-none-any.whl), a git URL (git+https://host/org/retrieval-gate@v0.4.0) "
                             "or a requirement an index serves (retrieval-gate==0.4.0) (default: how this one was "
                             "installed, when that was from git; else this version from your index)")
    parser.add_argument("--adapter", action="store_true",
                        help="the team's adapter, its command after '--' (argv, never a shell): written to the "
                             "config, so every run and the CI jobs gate it")
    parser.add_argument("--expect-banner", action="store_true",
                        help="with --adapter: fail unless it prints its ready banner first")
    return parser


def main(argv: list[str]) -> int:
    options, adapter = split_adapter_command(list(argv))
    args = parse_arguments(build_parser(), options)
    if args.adapter != bool(adapter):
        raise UsageError("init: --adapter takes the adapter's command after '--', e.g. --adapter -- python "
                         "search/adapter.py" if args.adapter else "init: a command after '--' needs --adapter")
    if args.expect_banner and not adapter:
        raise UsageError("init: --expect-banner: only with --adapter")
    install, guessed = (check_install_spec(args.install), False) if args.install else default_install_spec()
    own_sets = teams_own_sets(args.folder)
    deleted = own_sets is None and example_deleted(args.folder)
    written_ci = False
    for relative, text in starter_files(adapter=adapter, expect_banner=args.expect_banner, install=install,
                                        example=own_sets is None and not deleted).items():
        path = args.folder / relative
        try:
            written = write_new_text(path, text)
        except OSError as exc:
            raise UsageError(f"init: {path}: cannot be written: {exc.strerror or exc}") from None
        written_ci = written_ci or (written and relative in CI_FILES)
        print(f"{'wrote' if written else 'kept '} {path}")
    if own_sets is not None:
        print(f"skip  {args.folder / DEFAULT_SETS_DIR / EXAMPLE}/ (the example set: {own_sets} holds the team's own)")
    elif deleted:
        print(f"skip  {args.folder / DEFAULT_SETS_DIR / EXAMPLE}/ (the example set: deleted since an earlier init "
              f"wrote {args.folder / CONFIG_FILE}; init never brings back what a team removed)")
    if guessed and written_ci:
        print(f"note: the CI jobs install {install} from your package index; if it serves none, edit their install "
              f"line, or remove them and run init again with --install (a wheel file or a git URL): "
              f"docs/commands.md, \"Installing it\"", file=sys.stderr)
    print(f"next: cd {args.folder}; {program_name()} --set all --update-baseline --yes, commit, and CI gates on it",
          file=sys.stderr)
    return EXIT_OK


def starter_files(*, adapter: Sequence[str] = (), expect_banner: bool = False, install: str | None = None,
                  example: bool = True) -> dict[str, str]:
    """Relative path -> text of every file `init` writes, in the order it writes them (`example`: the example set
    too, for a sets folder holding none of the team's)."""
    sets = DEFAULT_SETS_DIR / EXAMPLE
    install = install or default_install_spec()[0]
    if not adapter:  # the CI jobs gate the built-in BM25, which needs numpy
        install = with_extra(install, BUILT_IN_EXTRA)
    example_files = {
        str(sets / "set.json"): _json(set_document()),
        str(sets / "queries.jsonl"): "".join(json.dumps(query) + "\n" for query in QUERIES),
        str(sets / "corpus.jsonl"): "".join(json.dumps({"id": doc_id, "text": text}) + "\n"
                                            for doc_id, text in DOCUMENTS.items()),
        str(sets / "README.md"): SET_README,
    } if example else {}
    return {
        CONFIG_FILE: config_text(adapter, expect_banner),
        **example_files,
        str(DEFAULT_BASELINE_PATH.parent / "README.md"): BASELINES_README,
        str(DEFAULT_BUDGETS_PATH): _json({"format": 1, "default_p95_ms": DEFAULT_P95_BUDGET_MS,
                                          "p95_ms": {EXAMPLE: DEFAULT_P95_BUDGET_MS} if example else {}}),
        str(DEFAULT_POLICY_FILE): _json(policy_document()),
        CI_FILES[0]: akurai_job(install),
        CI_FILES[1]: github_workflow(install),
        ".retrieval-gate/.gitignore": IGNORE,
    }


def config_text(adapter: Sequence[str] = (), expect_banner: bool = False) -> str:
    """retrieval-gate.toml: every key commented out, with what it holds and its default; the team's adapter
    (and its banner rule) written out when given."""
    lines = ["# retrieval-gate's settings for this repository (written by `retrieval-gate init`).",
             "# Every key is optional: each is shown commented out, with its default. Paths are relative to",
             "# this file's folder; a command-line option overrides its key.", ""]
    given: dict[str, object] = {"adapter": list(adapter), "expect_banner": expect_banner or None} if adapter else {}
    for key, (what, default) in CONFIG_KEYS.items():
        value = given.get(key)
        lines += [*textwrap.wrap(what, 98, initial_indent="# ", subsequent_indent="# "),
                  f"{key} = {json.dumps(value)}" if value is not None else f"# {key} = {json.dumps(default)}", ""]
    return "\n".join(lines)


def teams_own_sets(folder: Path) -> Path | None:
    """The team's sets folder when it holds a set of its own (any but the example), else None: the example is
    written only where it cannot stand beside, or come back after, the team's own sets."""
    config = folder / CONFIG_FILE
    try:
        values = read_config(config) if config.is_file() else {}
    except UsageError:
        values = {}  # a config `init` keeps as it is; its defects are said by the commands that read it
    sets_dir = folder / values.get("sets", str(DEFAULT_SETS_DIR))
    own = [set_folder for set_folder in sets_in(sets_dir) if set_folder.name != EXAMPLE]
    return sets_dir if own else None


def example_deleted(folder: Path) -> bool:
    """Whether the team deleted the example set: an earlier init wrote the config (its first file), and the
    example's folder, where init writes it, is gone (`exists` is False for a dangling link: `lexists`)."""
    example = folder / DEFAULT_SETS_DIR / EXAMPLE
    return (folder / CONFIG_FILE).is_file() and not os.path.lexists(example)


def check_install_spec(spec: str) -> str:
    """--install as a pip requirement: a wheel file path (`./ci/x.whl`), `git+URL` (named: `retrieval-gate @
    git+URL`), a direct reference `retrieval-gate @ URL`, or a requirement an index serves (`retrieval-gate`,
    `retrieval-gate==0.4.0`). UsageError for anything else, or a line break."""
    spec = spec.strip()
    if not spec or any(char in spec for char in "\r\n\0"):
        raise UsageError(f"init: --install: {spec!r:.80} is not one requirement")
    if spec.startswith("git+"):
        return f"{DISTRIBUTION} @ {spec}"
    if spec.endswith(".whl"):  # a path pip reads as a file, never as a name: ./ci/x.whl
        return spec if spec.startswith(("/", "./", "../")) else f"./{spec}"
    if " @ " in spec and spec.split(" @ ", 1)[0].split("[")[0] == DISTRIBUTION:
        return spec
    if _INDEX_REQUIREMENT.fullmatch(spec):
        return spec
    raise UsageError(f"init: --install: {spec!r:.80}: give a wheel file (./ci/retrieval_gate-VERSION-py3-none-any"
                     f".whl), a git URL (git+https://host/org/retrieval-gate@TAG) or a requirement such as "
                     f"{DISTRIBUTION}=={__version__}")


def default_install_spec() -> tuple[str, bool]:
    """(the requirement the CI jobs install, guessed): how this harness was installed when that was from a git
    URL (PEP 610's direct_url.json: the same commit), else this version from the package index (guessed)."""
    try:
        record = json.loads(importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        record = {}
    vcs = record.get("vcs_info") if isinstance(record, dict) else None
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and isinstance(record.get("url"), str) \
            and isinstance(vcs.get("commit_id"), str):
        return f"{DISTRIBUTION} @ git+{record['url']}@{vcs['commit_id']}", False
    return f"{DISTRIBUTION}=={__version__}", True


def with_extra(spec: str, extra: str) -> str:
    """The requirement with `[extra]`: after the wheel path, or after the distribution's name."""
    if spec.endswith(".whl"):
        return f"{spec}[{extra}]"
    name, extras, rest = re.match(r"([A-Za-z0-9._-]+)(?:\[([^\]]*)\])?(.*)", spec, re.S).groups()  # type: ignore[union-attr]
    wanted = [part.strip() for part in (extras or "").split(",") if part.strip()]
    return f"{name}[{','.join(dict.fromkeys([*wanted, extra]))}]{rest}"


def set_document() -> dict[str, object]:
    pins = {doc_id: content_sha256(DOCUMENTS[doc_id])
            for doc_id in sorted({doc_id for query in QUERIES for doc_id in query["relevant"]})}
    return {"format": SET_FORMAT, "name": EXAMPLE, "kind": EXAMPLE, "revision": 1,
            "description": "A starter set: a fictional app's help pages (replace it with yours; see README.md)",
            "k": 10, "corpus": {"source": "jsonl", "path": "corpus.jsonl"}, "pins": pins}


def policy_document() -> dict[str, object]:
    """The default gate policy as its file spells it: loading it gives the policy no file gives."""
    document = GatePolicy().to_dict()
    document.pop("source")
    return document


def _json(document: object) -> str:
    return json.dumps(document, indent=2) + "\n"
