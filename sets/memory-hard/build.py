"""Build the `memory-hard` set: agent-memory facts with supersession chains, scopes and hard paraphrases.

Run `python sets/memory-hard/build.py` from the repository root; it rewrites corpus.jsonl and
queries.jsonl here (then `python -m harness sets pin memory-hard` records the pins). The output
is a pure function of the tables below and SEED: re-running it gives identical files.

Everything is invented: Halden Works, a fictional software company, and its projects Marlin,
Wren, Ibis, Puffin, Heron and Tern, each run in production and staging (a scope is a project and an
environment). Each setting (deploy tool, paging service, ...) holds one value per scope. Some
scopes keep one fact; others changed their value once or twice, and memory keeps every fact:
the first decision (now stale, it still reads as if it held), each move ("moved from A to B",
dated), the last move being current. Same-setting facts of the other scopes share every word
but the scope's, so they are judged (grade 0) for the queries they are meant to confuse.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 32
PROJECTS = ("Marlin", "Wren", "Ibis", "Puffin", "Heron", "Tern")
ENVIRONMENTS = ("production", "staging")
# a hard paraphrase never says the environment's name
PARAPHRASED_ENVIRONMENTS = {"production": "live", "staging": "pre-release"}


@dataclass(frozen=True)
class Setting:
    key: str
    values: tuple[str, ...]
    decided: str    # the first decision: "{scope}" and "{value}"
    moved: str      # a move: "{scope}", "{old}" and "{value}"
    ask: str        # the plain question for the current value: "{scope}"
    reworded: str   # the hard paraphrase: "{pscope}" (paraphrased scope), no content word of the facts
    before: str     # the previous value: "{scope}", "{value}" (the current one)
    scoped: str     # another plain wording, for the scope questions: "{scope}"
    nearby: tuple[str, ...] = ()  # same scope, same vocabulary, another question: "{scope}"


SETTINGS = [
    Setting("deploy-tool", ("Argo CD", "Flux", "Spinnaker", "Octopus Deploy", "Kargo"),
            "{scope} deploys go out through {value}.", "{scope} deploys moved from {old} to {value}.",
            "Which deploy tool does {scope} use?", "What pushes fresh {pscope} versions onto the servers?",
            "What handled {scope} deploys before {value}?", "Through what are {scope} deploys sent out?",
            nearby=("{scope} deploys are frozen during the last week of each quarter.",
                    "{scope} deploys need a sign-off from the release captain.",
                    "{scope} deploy logs are archived for a year.")),
    Setting("paging", ("PagerDuty", "Opsgenie", "Beacon", "Squadcast", "Grafana OnCall"),
            "Alerts for {scope} page the on-call engineer via {value}.",
            "{scope} paging switched from {old} to {value}.",
            "Which paging service alerts the {scope} on-call engineer?",
            "When {pscope} breaks at night, what wakes somebody up?",
            "What did {scope} use for paging before {value}?", "How is the {scope} on-call engineer paged?",
            nearby=("The {scope} on-call rotation changes every Monday at 10:00.",
                    "Alerts for {scope} are silenced during planned maintenance windows.",
                    "The {scope} on-call engineer gets a day off after a night page.")),
    Setting("log-retention", ("7 days", "14 days", "30 days", "45 days", "90 days"),
            "{scope} application logs are kept for {value}.", "{scope} log retention changed from {old} to {value}.",
            "How long are {scope} application logs kept?",
            "How far back can we still read diagnostic output of {pscope}?",
            "What was the {scope} log retention before {value}?", "What log retention applies to {scope}?",
            nearby=("{scope} application logs are shipped as JSON lines.",
                    "{scope} application logs never contain customer email addresses.",
                    "{scope} audit logs are kept apart from application logs, for seven years.")),
    Setting("database", ("PostgreSQL 15", "PostgreSQL 16", "CockroachDB", "MySQL 8", "TiDB"),
            "{scope} stores its records in {value}.", "{scope} storage migrated from {old} to {value}.",
            "Which database does {scope} store its records in?",
            "Where does {pscope} persist its data these days?",
            "Which database did {scope} use before {value}?", "What database holds the {scope} records?",
            nearby=("{scope} records older than five years are archived to cold storage.",
                    "{scope} database schema changes need two reviewers.",
                    "{scope} reporting queries run against a read replica of its database.")),
    Setting("ci", ("GitHub Actions", "Buildkite", "Jenkins", "GitLab CI", "Forgejo Actions"),
            "{scope} builds and tests run on {value}.",
            "{scope} continuous integration moved from {old} to {value}.",
            "Which CI system runs {scope} builds and tests?",
            "What compiles and checks every pull request for {pscope}?",
            "Which CI system ran {scope} builds before {value}?", "Where do the {scope} builds run?",
            nearby=("{scope} builds fail when test coverage drops below 80 percent.",
                    "{scope} build caches are cleared every Sunday.",
                    "{scope} tests run in four parallel shards.")),
    Setting("region", ("eu-west-1", "eu-central-1", "eu-west-3", "us-east-2", "eu-north-1"),
            "The primary region of {scope} is {value}.", "{scope} moved its primary region from {old} to {value}.",
            "What is the primary region of {scope}?", "In which cloud location does {pscope} mainly live?",
            "Which primary region did {scope} have before {value}?", "Where is the {scope} primary region?",
            nearby=("{scope} keeps a warm standby in a secondary region.",
                    "{scope} failover to the secondary region is rehearsed twice a year.",
                    "{scope} customer data never leaves the European Union.")),
    Setting("owner", ("Atlas team", "Borealis team", "Cinder team", "Drift team", "Ember team"),
            "{scope} is owned by the {value}.", "ownership of {scope} passed from the {old} to the {value}.",
            "Which team owns {scope}?", "Who is responsible for looking after {pscope}?",
            "Which team owned {scope} before the {value}?", "Who owns {scope}?",
            nearby=("{scope} questions go to the owning team's channel.",
                    "{scope} ownership is reviewed every January.",
                    "The team owning {scope} also answers its support escalations.")),
    Setting("backups", ("every hour", "every six hours", "every night", "every twelve hours", "every fifteen minutes"),
            "{scope} backups run {value}.", "the {scope} backup schedule changed from {old} to {value}.",
            "How often do {scope} backups run?", "How frequently is a safety copy of {pscope} taken?",
            "How often did {scope} backups run before the change to {value}?",
            "What is the {scope} backup schedule?",
            nearby=("{scope} backups are restored in a drill every quarter.",
                    "{scope} backups are encrypted and kept for 35 days.",
                    "{scope} backup failures page the storage rota.")),
    Setting("errors", ("Sentry", "Rollbar", "Bugsnag", "Honeybadger", "GlitchTip"),
            "{scope} exceptions are reported to {value}.", "{scope} error tracking switched from {old} to {value}.",
            "Which error tracker receives {scope} exceptions?", "Where do crash reports of {pscope} end up?",
            "Which error tracker did {scope} use before {value}?", "Where are {scope} exceptions reported?",
            nearby=("{scope} exceptions from browsers are sampled at 10 percent.",
                    "{scope} error reports strip personal data before sending.",
                    "{scope} exceptions are triaged every morning by the owning team.")),
]

# Alert rules: named resources asked about by their identifier (where exact tokens decide).
CONDITIONS = ("disk usage passes 90 percent", "p95 latency stays above 800 ms for ten minutes",
              "the error rate exceeds 2 percent", "a certificate expires within 14 days",
              "replication lag passes 30 seconds", "the queue backlog passes 10,000 messages",
              "memory usage passes 85 percent", "no heartbeat arrives for five minutes")
IDENTIFIER_ASKS = ("When does alert rule {rule} fire?", "What condition triggers {rule}?",
                   "Which team does alert {rule} notify?", "{rule}: what does it watch, and for which project?")
RULES = 48


def scope_text(project: str, environment: str) -> str:
    return f"{project} {environment}"


def pscope_text(project: str, environment: str) -> str:
    return f"{PARAPHRASED_ENVIRONMENTS[environment]} {project}"


def dated(rng: random.Random, year: int) -> str:
    return f"{year}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


def build() -> tuple[list[dict], list[dict]]:
    rng = random.Random(SEED)
    facts: list[tuple[str, str]] = []  # (key, text) in creation order; ids are given after a shuffle
    chains: list[tuple[Setting, str, str, list[str], list[str]]] = []  # setting, project, env, fact keys, values
    singles: list[tuple[Setting, str, str, str]] = []
    latest: dict[tuple[str, str, str], str] = {}  # (setting, project, env) -> the scope's current fact
    nearby: dict[tuple[str, str, str], list[str]] = {}  # (setting, project, env) -> its near-miss facts
    by_setting: dict[str, list[str]] = {}

    def add(key: str, text: str, setting: str | None = None) -> str:
        facts.append((key, text))
        if setting:
            by_setting.setdefault(setting, []).append(key)
        return key

    for setting in SETTINGS:
        scopes = [(p, e) for p in PROJECTS for e in ENVIRONMENTS]
        rng.shuffle(scopes)
        for number, (project, environment) in enumerate(scopes):
            scope = scope_text(project, environment)
            length = 1 if number % 2 else (2 if number % 4 == 0 else 3)  # half single, a quarter each 2 and 3
            values = rng.sample(setting.values, length)
            years = sorted(rng.sample(range(2022, 2027), length))
            base = f"{setting.key}/{project}/{environment}"
            keys = [add(f"{base}/0", f"Decision {dated(rng, years[0])}: "
                                     + setting.decided.format(scope=scope, value=values[0]), setting.key)]
            for step in range(1, length):
                keys.append(add(f"{base}/{step}", f"On {dated(rng, years[step])}, "
                                + setting.moved.format(scope=scope, old=values[step - 1], value=values[step]),
                                setting.key))
            latest[setting.key, project, environment] = keys[-1]
            nearby[setting.key, project, environment] = [
                add(f"{base}/near{index}", template.format(scope=scope)) for index, template in enumerate(setting.nearby)]
            if length == 1:
                singles.append((setting, project, environment, keys[0]))
            else:
                chains.append((setting, project, environment, keys, values))

    rules = []
    numbers = rng.sample(range(1000, 9999), RULES * 3)
    teams = SETTINGS[6].values
    for index in range(RULES):
        condition = CONDITIONS[index % len(CONDITIONS)]
        project, environment = rng.choice(PROJECTS), rng.choice(ENVIRONMENTS)
        own = []
        for twin in range(3):  # the asked rule, then two worded alike: same condition and scope, another number
            rule = f"ALR-{numbers[index * 3 + twin]}"
            own.append(add(f"rule/{rule}", f"Alert rule {rule} on {scope_text(project, environment)} fires when "
                                           f"{condition} and notifies the {rng.choice(teams)}."))
        rules.append((index, f"ALR-{numbers[index * 3]}", own))

    order = [key for key, _ in facts]
    rng.shuffle(order)
    ids = {key: f"mem-{number:04d}" for number, key in enumerate(order, start=1)}
    text_of = dict(facts)
    corpus = [{"id": ids[key], "text": text_of[key]} for key in order]

    queries: list[dict] = []
    unit = 0

    def emit(query: str, relevant: dict[str, int], category: str, split: str, source: str,
             group: str | None = None, **contracts) -> None:
        row = {"qid": f"memory-hard-{len(queries) + 1:03d}", "query": query,
               "relevant": dict(sorted((ids[key], grade) for key, grade in relevant.items())),
               "category": category, "split": split, "source": source}
        if group:
            row["group"] = group
        for name, value in contracts.items():
            row[name] = value
        queries.append(row)

    for setting, project, environment, keys, values in chains:
        unit += 1
        split = "development" if unit % 2 else "held-out"
        scope, pscope = scope_text(project, environment), pscope_text(project, environment)
        others = {key: 0 for key in by_setting[setting.key] + nearby[setting.key, project, environment]
                  if key not in keys}  # same setting in other scopes, and this scope's near misses
        current = {**others, **{key: 0 for key in keys[:-1]}, keys[-1]: 1}
        contracts = {"forbid": [ids[keys[0]]]}  # the first decision still reads as if it held
        if len(keys) == 3:  # the first move named a value that was replaced since
            contracts["rank_before"] = {"before": ids[keys[-1]], "after": ids[keys[1]]}
        group = f"memory-hard-{setting.key}-{project}-{environment}".lower()
        emit(setting.ask.format(scope=scope), current, "current", split, "synthetic", group, **contracts)
        emit(setting.reworded.format(pscope=pscope), current, "paraphrase", split, "paraphrase", group, **contracts)
        # the previous value: the move that replaced it (names both) and the fact that introduced it
        previous = {**others, **{key: 0 for key in keys}, keys[-1]: 1, keys[-2]: 1}
        emit(setting.before.format(scope=scope, value=values[-1]), previous, "previous-value", split, "synthetic")

    for setting, project, environment, key in singles:
        unit += 1
        split = "development" if unit % 2 else "held-out"
        scope = scope_text(project, environment)
        judged = {**{other: 0 for other in by_setting[setting.key] + nearby[setting.key, project, environment]}, key: 1}
        group = f"memory-hard-scope-{setting.key}-{project}-{environment}".lower()
        # the same project's other environment must rank below (memory's scope contract, ordered)
        sibling = latest[setting.key, project, next(e for e in ENVIRONMENTS if e != environment)]
        order = {"rank_before": {"before": ids[key], "after": ids[sibling]}}
        emit(setting.ask.format(scope=scope), judged, "scope", split, "synthetic", group, **order)
        emit(setting.scoped.format(scope=pscope_text(project, environment)), judged, "scope", split, "paraphrase",
             group, **order)

    for index, rule, own in rules:
        split = "development" if index % 2 else "held-out"
        emit(IDENTIFIER_ASKS[index % len(IDENTIFIER_ASKS)].format(rule=rule), {own[0]: 1, own[1]: 0, own[2]: 0},
             "identifier", split, "synthetic")
    return corpus, queries


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    corpus, queries = build()
    write_jsonl(HERE / "corpus.jsonl", corpus)
    write_jsonl(HERE / "queries.jsonl", queries)
    print(f"{len(corpus)} facts, {len(queries)} queries")


if __name__ == "__main__":
    main()
