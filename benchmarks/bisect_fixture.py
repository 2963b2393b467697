"""A repository to bisect, built in a temp folder: a tiny adapter whose ranking depends on a file it holds.

The set (written by us, built here, never committed): QUERIES queries, each with one relevant
document, in a corpus twice that size. The repository: `adapter.py`, which answers each query with
its relevant document first unless `ranking.json` lists the query as missed (then ten other
documents), and `ranking.json`, rewritten by each of COMMITS commits:

- every commit is noise: NOISE_FLIPS queries found at the first commit are missed and as many
  missed ones found, drawn afresh each commit (a refactor that moves a few ties, either way);
- with a culprit, the commit at its index (drawn by the seed, neither the first nor the last)
  and every later one also miss DROP_QUERIES more queries: a 5-point recall@10 drop.

The first commit is GOOD and the last BAD, as `bisect GOOD BAD` is given them. Used by the bisect
benchmark (benchmarks/history.py) and the bisect contract test.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.sets.corpus import content_sha256

COMMITS = 64
QUERIES = 400
MISSED = 0.2          # recall@10 at the first commit: 0.8
DROP_QUERIES = 20     # 20 of 400: 5 points
NOISE_FLIPS = 2       # each way, per commit

ADAPTER = '''\
"""The fixture's adapter: the relevant document first unless ranking.json says the query is missed."""
import json
import sys

missed = set(json.load(open("ranking.json"))["missed"])
for line in sys.stdin:
    request = json.loads(line)
    number = int(request["qid"].split("-")[1])
    others = [f"doc-{{(number + step) % {others} + {queries}:04d}}" for step in range(1, 11)]
    ids = others if request["qid"] in missed else [f"doc-{{number:04d}}", *others[:9]]
    print(json.dumps({{"ids": ids[:request["k"]]}}), flush=True)
'''


@dataclass(frozen=True)
class Fixture:
    repository: Path
    set_folder: Path
    commits: tuple[str, ...]
    culprit: int | None  # the index in `commits` of the first bad one

    @property
    def good(self) -> str:
        return self.commits[0]

    @property
    def bad(self) -> str:
        return self.commits[-1]

    @property
    def adapter(self) -> list[str]:
        """The command bisect starts in each commit's worktree."""
        return [sys.executable, "adapter.py"]


def build(folder: Path, seed: int, *, culprit: bool = True, commits: int = COMMITS, queries: int = QUERIES) -> Fixture:
    """The set and the repository of `commits` commits under `folder` (which must be empty or missing)."""
    rng = random.Random(seed)
    set_folder = _write_set(folder / "sets" / "fixture", queries)
    repository = folder / "repository"
    repository.mkdir(parents=True)
    _git(repository, "init", "-q", "-b", "main")
    (repository / "adapter.py").write_text(ADAPTER.format(others=queries, queries=queries), encoding="utf-8")
    qids = [f"q-{number:04d}" for number in range(queries)]
    base_missed = set(rng.sample(qids, int(MISSED * queries)))
    found = [qid for qid in qids if qid not in base_missed]
    dropped = set(rng.sample(found, DROP_QUERIES * queries // QUERIES))
    culprit_index = rng.randrange(1, commits - 1) if culprit else None
    names = []
    for index in range(commits):
        missed = set(base_missed)
        if culprit_index is not None and index >= culprit_index:
            missed |= dropped
        flips = NOISE_FLIPS if index else 0
        found_now = sorted(set(qids) - missed)
        lost, regained = rng.sample(found_now, flips), rng.sample(sorted(base_missed), flips)
        missed = (missed | set(lost)) - set(regained)
        (repository / "ranking.json").write_text(json.dumps({"missed": sorted(missed)}, indent=0) + "\n",
                                                 encoding="utf-8")
        _git(repository, "add", "-A")
        _git(repository, "commit", "-q", "-m", f"commit {index}", date=index)
        names.append(_git(repository, "rev-parse", "HEAD"))
    return Fixture(repository, set_folder, tuple(names), culprit_index)


def _write_set(folder: Path, queries: int) -> Path:
    folder.mkdir(parents=True)
    documents = {f"doc-{number:04d}": f"Note {number} about widget {number % 37} and gadget {number % 53}."
                 for number in range(2 * queries)}
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for doc_id, text in documents.items():
            handle.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for number in range(queries):
            handle.write(json.dumps({"qid": f"q-{number:04d}", "query": f"widget {number % 37} gadget {number % 53}",
                                     "relevant": {f"doc-{number:04d}": 1}, "category": f"c{number % 4}",
                                     "split": "development", "source": "synthetic"}) + "\n")
    pins = {f"doc-{number:04d}": content_sha256(documents[f"doc-{number:04d}"]) for number in range(queries)}
    (folder / "set.json").write_text(json.dumps({
        "format": 1, "name": "fixture", "kind": "fixture", "revision": 1,
        "description": "The bisect fixture: one relevant document per query.", "k": 10,
        "corpus": {"source": "jsonl", "path": "corpus.jsonl"}, "pins": pins}, indent=1) + "\n", encoding="utf-8")
    return folder


def _git(repository: Path, *args: str, date: int = 0) -> str:
    """git in `repository` with a fixed identity and commit times one minute apart (reproducible hashes)."""
    moment = f"{1767225600 + 60 * date} +0000"
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repository),
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "fixture", "GIT_AUTHOR_EMAIL": "fixture@example.org",
                   "GIT_COMMITTER_NAME": "fixture", "GIT_COMMITTER_EMAIL": "fixture@example.org",
                   "GIT_AUTHOR_DATE": moment, "GIT_COMMITTER_DATE": moment}
    return subprocess.run(["git", "-C", str(repository), *args], check=True, capture_output=True, text=True,
                          env=environment).stdout.strip()
