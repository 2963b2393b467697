"""`retrieval-gate init [DIR]`: a team's repository in one command, its starter layout written, nothing overwritten.

Writes the config with every key and its default, a tiny working set whose README explains each
field, an empty baselines folder, the budgets and the gate policy with the defaults spelled out
(generated from the code's defaults, so they cannot drift), and the CI jobs for the gate. A file
that exists is kept as it is and reported "kept".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.commands.arguments import command_parser, parse_arguments, program_name
from harness.errors import EXIT_OK, UsageError
from harness.fsutil import write_new_text
from harness.gating.baseline import DEFAULT_BASELINE_PATH
from harness.gating.budgets import DEFAULT_BUDGETS_PATH, DEFAULT_P95_BUDGET_MS
from harness.gating.policy import DEFAULT_POLICY_FILE, GatePolicy
from harness.layout import CONFIG_FILE, CONFIG_KEYS, DEFAULT_SETS_DIR
from harness.sets.corpus import content_sha256
from harness.sets.loader import SET_FORMAT

EXAMPLE = "example"
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
INSTALL = "python -m pip install 'retrieval-gate[bm25]'"
HISTORY = ".retrieval-gate/history.sqlite"  # each gated run appended (docs/history.md); kept from job to job
GATE = ("python -m harness --set all --out .retrieval-gate/report.json --summary .retrieval-gate/summary.md "
        f"--junit .retrieval-gate/junit.xml --history {HISTORY}")
AKURAI = f"""\
# The retrieval gate (written by `retrieval-gate init`): gates every push against baselines/current.json.
# Each run is appended to {HISTORY}: restore it from the last job's artifact before the gate, and
# `python -m harness history` shows its series and change points (docs/history.md).
jobs:
  retrieval-gate:
    on: [push, pull_request]
    steps:
      - run: {INSTALL}
      - run: {GATE}
    artifacts:
      - .retrieval-gate/
"""
GITHUB = f"""\
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
      - run: {INSTALL}
      # the history of every gated run (docs/history.md): the newest saved store, kept as a new one after
      - uses: actions/cache@v4
        with:
          path: {HISTORY}
          key: retrieval-gate-history-${{{{ github.run_id }}}}
          restore-keys: retrieval-gate-history-
      # --summary is also appended to the job's page ($GITHUB_STEP_SUMMARY)
      - run: {GATE}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: retrieval-gate
          path: .retrieval-gate/
"""


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "init", "Write a starter layout into a team's repository: retrieval-gate.toml (every key, commented, "
                "with its default), an example set, an empty baselines folder, budgets.json, gate-policy.json "
                "(the defaults spelled out) and the CI jobs (.akurai.yml, GitHub Actions). Never overwrites: "
                "a file that exists is kept.")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("."),
                        help="the team's repository (default: the working folder; created if missing)")
    return parser


def main(argv: list[str]) -> int:
    args = parse_arguments(build_parser(), argv)
    for relative, text in starter_files().items():
        path = args.folder / relative
        try:
            written = write_new_text(path, text)
        except OSError as exc:
            raise UsageError(f"init: {path}: cannot be written: {exc.strerror or exc}") from None
        print(f"{'wrote' if written else 'kept '} {path}")
    print(f"next: cd {args.folder}; {program_name()} --set all --update-baseline --yes, commit, and CI gates on it",
          file=sys.stderr)
    return EXIT_OK


def starter_files() -> dict[str, str]:
    """Relative path -> text of every file `init` writes, in the order it writes them."""
    sets = DEFAULT_SETS_DIR / EXAMPLE
    return {
        CONFIG_FILE: config_text(),
        str(sets / "set.json"): _json(set_document()),
        str(sets / "queries.jsonl"): "".join(json.dumps(query) + "\n" for query in QUERIES),
        str(sets / "corpus.jsonl"): "".join(json.dumps({"id": doc_id, "text": text}) + "\n"
                                            for doc_id, text in DOCUMENTS.items()),
        str(sets / "README.md"): SET_README,
        str(DEFAULT_BASELINE_PATH.parent / "README.md"): BASELINES_README,
        str(DEFAULT_BUDGETS_PATH): _json({"format": 1, "default_p95_ms": DEFAULT_P95_BUDGET_MS,
                                          "p95_ms": {EXAMPLE: DEFAULT_P95_BUDGET_MS}}),
        str(DEFAULT_POLICY_FILE): _json(policy_document()),
        ".akurai.yml": AKURAI,
        ".github/workflows/retrieval-gate.yml": GITHUB,
    }


def config_text() -> str:
    """retrieval-gate.toml: every key commented out, with what it holds and its default."""
    lines = ["# retrieval-gate's settings for this repository (written by `retrieval-gate init`).",
             "# Every key is optional: each is shown commented out, with its default. Paths are relative to",
             "# this file's folder; a command-line option overrides its key.", ""]
    for key, (what, default) in CONFIG_KEYS.items():
        lines += [f"# {what}", f"# {key} = {json.dumps(default)}", ""]
    return "\n".join(lines)


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
