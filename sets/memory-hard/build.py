"""Build the `memory-hard` set: agent-memory facts with supersession chains, scopes, paraphrases and probes.

Run `python sets/memory-hard/build.py` from the repository root; it rewrites corpus.jsonl and
queries.jsonl here (then `python -m harness sets pin memory-hard` records the pins). The output
is a pure function of the tables below and SEED: re-running it gives identical files.

Everything is invented: Halden Works, a fictional software company, and its ten projects (PROJECTS),
each run in production and staging (a scope is a project and an environment). Each setting
(deploy tool, paging service, ...) holds one value per scope. Some scopes keep one fact; others
changed their value once or twice, and memory keeps every fact: the first decision (now stale, it
still reads as if it held), each move ("moved from A to B", dated), the last move being current.
Same-setting facts of the other scopes share every word but the scope's, so they are judged
(grade 0) for the queries they are meant to confuse.

It carries every contract style of the founding `memory` set (docs/sets.md, "memory-hard"):
multi-fact paraphrases, negative probes (`no_relevant`, `max_score`, `measure_only`), `xfail` for
the known gaps (the supersession trap, projects memory never heard of), `forbid` and
`rank_before`. The hard contracts are worded so that the reference BM25 keeps every one under
its defaults and each small change of its settings: a question names its setting by one word of
its facts, and what it forbids is another scope's fact that does not share that word.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 32
PROJECTS = ("Marlin", "Wren", "Ibis", "Puffin", "Heron", "Tern", "Osprey", "Plover", "Dunlin", "Egret")
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
    scoped: str     # the scope question: the scope and one word of the setting's first decision: "{scope}"
    need: str       # the hard paraphrase as one question of several about a scope ("it" is the scope)
    both: str       # the hard paraphrase asked of both environments of "{project}"
    still: str      # does the first value still hold: "{scope}", "{old}" (the supersession trap)
    nearby: tuple[str, ...] = ()  # same scope, same vocabulary, another question: "{scope}"


SETTINGS = [
    Setting("deploy-tool", ("Argo CD", "Flux", "Spinnaker", "Octopus", "Kargo"),
            "{scope} deploys go out through {value}.", "{scope} deploys moved from {old} to {value}.",
            "Which deploy tool does {scope} use?", "What pushes fresh {pscope} versions onto the servers?",
            "What handled {scope} deploys before {value}?", "Which tool ships {scope} deploys?",
            "what pushes fresh versions of it onto the servers",
            "What pushes fresh versions of live and pre-release {project} onto the servers?",
            "Do {scope} deploys still go out through {old}?",
            nearby=("{scope} deploys are frozen during the last week of each quarter.",
                    "{scope} deploys need a sign-off from the release captain.",
                    "{scope} deploy logs are archived for a year.")),
    Setting("paging", ("PagerDuty", "Opsgenie", "Beacon", "Squadcast", "Zenduty"),
            "{scope} paging goes through {value}, which calls the on-call engineer.",
            "{scope} paging switched from {old} to {value}.",
            "Which paging service alerts the {scope} on-call engineer?",
            "When {pscope} breaks at night, what wakes somebody up?",
            "What did {scope} use for paging before {value}?", "Who calls the {scope} on-call engineer?",
            "what wakes somebody up when it breaks at night",
            "When live or pre-release {project} breaks at night, what wakes somebody up?",
            "Does {scope} paging still go through {old}?",
            nearby=("The {scope} on-call rotation changes every Monday at 10:00.",
                    "Alerts for {scope} are silenced during planned maintenance windows.",
                    "The {scope} on-call engineer gets a day off after a night page.")),
    Setting("log-retention", ("7 days", "14 days", "30 days", "45 days", "90 days"),
            "{scope} application logs are kept for {value}.", "{scope} log retention changed from {old} to {value}.",
            "How long are {scope} application logs kept?",
            "How far back can we still read diagnostic output of {pscope}?",
            "What was the {scope} log retention before {value}?", "How long do {scope} logs last?",
            "how far back can its diagnostic output still be read",
            "How far back can we still read diagnostic output of live and pre-release {project}?",
            "Are {scope} application logs still kept for {old}?",
            nearby=("{scope} application logs are shipped as JSON lines.",
                    "{scope} application logs never contain customer email addresses.",
                    "{scope} audit logs are kept apart from application logs, for seven years.")),
    Setting("database", ("PostgreSQL 15", "PostgreSQL 16", "CockroachDB", "MySQL 8", "TiDB"),
            "{scope} stores its records in {value}.", "{scope} storage migrated from {old} to {value}.",
            "Which database does {scope} store its records in?",
            "Where does {pscope} persist its data these days?",
            "Which database did {scope} use before {value}?", "Where are {scope} records stored?",
            "where does it persist its data",
            "Where do live and pre-release {project} persist their data these days?",
            "Does {scope} still store its records in {old}?",
            nearby=("{scope} records older than five years are archived to cold storage.",
                    "{scope} database schema changes need two reviewers.",
                    "{scope} reporting queries run against a read replica of its database.")),
    Setting("ci", ("GitHub Actions", "Buildkite", "Jenkins", "Drone", "Forgejo Actions"),
            "{scope} builds and tests run on {value}.",
            "{scope} continuous integration moved from {old} to {value}.",
            "Which CI system runs {scope} builds and tests?",
            "What compiles and checks every pull request for {pscope}?",
            "Which CI system ran {scope} builds before {value}?", "What runs {scope} tests?",
            "what compiles and checks every pull request for it",
            "What compiles and checks every pull request for live and pre-release {project}?",
            "Do {scope} builds and tests still run on {old}?",
            nearby=("{scope} builds fail when test coverage drops below 80 percent.",
                    "{scope} build caches are cleared every Sunday.",
                    "{scope} tests run in four parallel shards.")),
    Setting("region", ("eu-west-1", "eu-central-1", "eu-west-3", "us-east-2", "eu-north-1"),
            "The primary region of {scope} is {value}.", "{scope} moved its primary region from {old} to {value}.",
            "What is the primary region of {scope}?", "In which cloud location does {pscope} mainly live?",
            "Which primary region did {scope} have before {value}?", "Where is the {scope} region?",
            "in which cloud location does it mainly live",
            "In which cloud locations do live and pre-release {project} mainly live?",
            "Is the primary region of {scope} still {old}?",
            nearby=("{scope} keeps a warm standby in a secondary region.",
                    "{scope} failover to the secondary region is rehearsed twice a year.",
                    "{scope} customer data never leaves the European Union.")),
    Setting("owner", ("Atlas team", "Borealis team", "Cinder team", "Drift team", "Ember team"),
            "{scope} is owned by the {value}.", "ownership of {scope} passed from the {old} to the {value}.",
            "Which team owns {scope}?", "Who is responsible for looking after {pscope}?",
            "Which team had {scope} before the {value}?", "By whom is {scope} owned?",
            "who is responsible for looking after it",
            "Who is responsible for looking after live and pre-release {project}?",
            "Is {scope} still owned by the {old}?",
            nearby=("{scope} questions go to the owning team's channel.",
                    "{scope} ownership is reviewed every January.",
                    "The team owning {scope} also answers its support escalations.")),
    Setting("backups", ("every hour", "every six hours", "every night", "every twelve hours", "every fifteen minutes"),
            "{scope} backups run {value}.", "{scope} backups moved from {old} to {value}.",
            "How often do {scope} backups run?", "How frequently is a safety copy of {pscope} taken?",
            "How often did {scope} backups run before they moved to {value}?",
            "When do {scope} backups happen?",
            "how frequently is a safety copy of it taken",
            "How frequently is a safety copy of live and pre-release {project} taken?",
            "Do {scope} backups still run {old}?",
            nearby=("{scope} backups are restored in a drill every quarter.",
                    "{scope} backups are encrypted and kept for 35 days.",
                    "{scope} backup failures page the storage rota.")),
    Setting("errors", ("Sentry", "Rollbar", "Bugsnag", "Honeybadger", "GlitchTip"),
            "{scope} exceptions are reported to {value}.", "{scope} error tracking switched from {old} to {value}.",
            "Which error tracker receives {scope} exceptions?", "Where do crash reports of {pscope} end up?",
            "Which error tracker did {scope} use before {value}?", "Where do {scope} exceptions go?",
            "where do its crash reports end up",
            "Where do crash reports of live and pre-release {project} end up?",
            "Are {scope} exceptions still reported to {old}?",
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
RULES = 64
# Projects memory knows nothing about: asked like the others, nothing answers them (the unanswerable probes).
UNKNOWN_PROJECTS = ("Gannet", "Curlew", "Avocet")
# Off-topic negative probes: no word of any of them occurs in the facts (the test checks it).
OFF_TOPIC = (
    "sourdough starter hydration ratio", "raglan cardigan knitting pattern", "volcano hiking permits Iceland",
    "espresso grinder burr alignment", "tomato seedlings transplant shock", "violin bow rehair cost",
    "marathon taper carbohydrate loading", "watercolor granulation pigments", "bonsai juniper wiring",
    "chess Sicilian Najdorf opening", "kayak roll technique", "beekeeping swarm prevention",
    "origami crane folding steps", "pottery glaze crawling", "ukulele chord shapes",
    "telescope collimation Newtonian", "sailing knots bowline", "vegan lasagna béchamel",
    "birdwatching warbler identification", "climbing rope dynamic elongation", "crochet amigurumi stuffing",
    "kombucha SCOBY mold", "calligraphy nib flex", "sushi rice vinegar seasoning",
    "snowboard wax temperature", "aquarium cycling ammonia", "macramé plant hanger knots",
    "cycling cadence hills", "guitar pedalboard patch cables", "fermenting kimchi brine",
    "hedgehog hibernation diet", "wedding toast etiquette", "ballroom waltz footwork",
    "jigsaw puzzle sorting edges", "orchid repotting bark", "mushroom foraging chanterelles",
    "saxophone reed strength", "trampoline springs rust", "lighthouse keepers folklore",
    "medieval castle moat depth", "penguin colony breeding", "cheese rind washing",
    "tapestry loom warp tension", "skateboard bearings cleaning", "haiku syllable counting",
    "fountain pen ink flushing", "soap making lye safety", "pickleball paddle grip",
    "greenhouse cucumbers pollination", "dinosaur fossils Patagonia", "canoe portage yoke padding",
    "pastry lamination butter", "harp string gauges", "gecko terrarium humidity",
    "quilting binding corners", "falconry hood leather", "tango embrace posture",
    "carp fishing bait", "sundial gnomon angle", "pilates reformer exercises",
    "glassblowing annealing oven", "bagpipe chanter reeds", "ramen broth tonkotsu",
    "yoga headstand wall", "stamp collecting watermarks", "cider pressing apples",
    "archery arrow spine", "snorkeling reef etiquette", "embroidery hoop stitches",
    "woodturning bowl gouge", "perfume base notes", "mosaic grout sealing",
    "croissant proofing humidity", "badminton shuttlecock feathers", "lavender pruning autumn",
    "harmonica bending notes", "flamenco guitar rasgueado", "pumpkin carving stencils",
    "accordion bellows leaks", "trout fly tying", "crossword cryptic clues",
    "dumpling pleating folds", "rowing ergometer splits", "parrot feather plucking",
    "sandcastle sculpting tools", "curling stone sweeping", "kite surfing harness",
    "marzipan figurines colouring", "ferret cage bedding", "banjo tuning pegs",
)
# No hit may score at or above this on a negative or unanswerable probe (a backend that reports confidence).
NO_STRONG_MATCH = 0.5


def scope_text(project: str, environment: str) -> str:
    return f"{project} {environment}"


def pscope_text(project: str, environment: str) -> str:
    return f"{PARAPHRASED_ENVIRONMENTS[environment]} {project}"


def dated(rng: random.Random, year: int) -> str:
    return f"{year}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


def capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


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

    def judged_around(setting: Setting, project: str, environment: str) -> dict[str, int]:
        """Grade 0 for the setting's facts in every scope and the scope's near misses."""
        return {key: 0 for key in by_setting[setting.key] + nearby[setting.key, project, environment]}

    def elsewhere(setting: Setting, project: str, environment: str, moved: bool, avoiding: str = "") -> str:
        """The current fact of the setting in another project's other environment: what a scope contract forbids.

        It is a move (`moved`) or a first decision, so that it shares the setting's words with the question
        only as far as the other wording does, and it does not name `avoiding` (the value the question names).
        """
        others = [p for p in PROJECTS if p != project]
        other_environment = next(e for e in ENVIRONMENTS if e != environment)
        start = (PROJECTS.index(project) + len(setting.key)) % len(others)
        candidates = [latest[setting.key, others[(start + step) % len(others)], other_environment]
                      for step in range(len(others))]
        return next(key for key in candidates if key.endswith("/0") != moved
                    and (not avoiding or avoiding not in text_of[key]))

    for setting, project, environment, keys, values in chains:
        unit += 1
        split = "development" if unit % 2 else "held-out"
        scope, pscope = scope_text(project, environment), pscope_text(project, environment)
        current = {**judged_around(setting, project, environment), keys[-1]: 1}
        group = f"memory-hard-{setting.key}-{project}-{environment}".lower()
        emit(setting.ask.format(scope=scope), current, "current", split, "synthetic", group)
        emit(setting.reworded.format(pscope=pscope), current, "reworded", split, "paraphrase", group)
        # the previous value: the move that replaced it (names both) and the fact that introduced it
        previous = {**judged_around(setting, project, environment), keys[-1]: 1, keys[-2]: 1}
        # another scope's fact of the setting that does not name today's value stays out of the top 10; and
        # in a chain of three, the move naming today's value ranks above the stale first decision
        stranger = elsewhere(setting, project, environment, moved=False, avoiding=values[-1])
        order = {"rank_before": {"before": ids[keys[-1]], "after": ids[keys[0]]}} if len(keys) == 3 else {}
        emit(setting.before.format(scope=scope, value=values[-1]), {**previous, stranger: 0}, "previous-value", split,
             "synthetic", forbid=[ids[stranger]], **order)
        # the supersession trap: asked whether the first value still holds, in the first decision's own words;
        # ranking the current fact above the stale ones needs a notion of time no reference backend has
        trap = {"forbid": [ids[keys[0]]]}
        if len(keys) == 3:  # the first move named a value that was replaced since
            trap["rank_before"] = {"before": ids[keys[-1]], "after": ids[keys[1]]}
        emit(setting.still.format(scope=scope, old=values[0]), current, "supersession", split, "synthetic",
             outcome="xfail", **trap)

    for setting, project, environment, key in singles:
        unit += 1
        split = "development" if unit % 2 else "held-out"
        scope = scope_text(project, environment)
        judged = {**judged_around(setting, project, environment), key: 1}
        group = f"memory-hard-scope-{setting.key}-{project}-{environment}".lower()
        # the same project's other environment must rank below, and another project's fact stay out
        sibling = latest[setting.key, project, next(e for e in ENVIRONMENTS if e != environment)]
        stranger = elsewhere(setting, project, environment, moved=True)
        emit(setting.scoped.format(scope=scope), {**judged, stranger: 0}, "scope", split, "synthetic", group,
             forbid=[ids[stranger]], rank_before={"before": ids[key], "after": ids[sibling]})
        emit(setting.scoped.format(scope=pscope_text(project, environment)), judged, "scope", split, "paraphrase",
             group)

    # Multi-fact paraphrases: two settings of one scope, or one setting of both environments, asked in words
    # the facts do not use; every current fact asked about is relevant.
    scopes = [(p, e) for p in PROJECTS for e in ENVIRONMENTS]
    for number, (project, environment) in enumerate(scopes):
        offset = 1 + number % (len(SETTINGS) - 1)  # never a setting paired with itself
        pairs = [(SETTINGS[i], SETTINGS[(i + offset) % len(SETTINGS)]) for i in range(len(SETTINGS))]
        for first, second in pairs[:7]:
            unit += 1
            split = "development" if unit % 2 else "held-out"
            relevant = {**judged_around(first, project, environment), **judged_around(second, project, environment),
                        latest[first.key, project, environment]: 1, latest[second.key, project, environment]: 1}
            emit(f"For {pscope_text(project, environment)}: {first.need}, and {second.need}?", relevant,
                 "paraphrase", split, "paraphrase")
    for index, project in enumerate(PROJECTS):
        for setting in SETTINGS[index % 2::2]:
            unit += 1
            split = "development" if unit % 2 else "held-out"
            relevant = {key: 0 for environment in ENVIRONMENTS for key in nearby[setting.key, project, environment]}
            relevant.update({key: 0 for key in by_setting[setting.key]})
            relevant.update({latest[setting.key, project, environment]: 1 for environment in ENVIRONMENTS})
            emit(setting.both.format(project=project), relevant, "paraphrase", split, "paraphrase")

    for index, rule, own in rules:
        split = "development" if index % 2 else "held-out"
        emit(IDENTIFIER_ASKS[index % len(IDENTIFIER_ASKS)].format(rule=rule), {own[0]: 1, own[1]: 0, own[2]: 0},
             "identifier", split, "synthetic")

    # Probes with no answer: off-topic (measure_only, as the founding memory set's negatives), and the
    # plain question about a project memory never heard of (a known gap: no reference backend abstains).
    for index, text in enumerate(OFF_TOPIC):
        emit(text, {}, "negative", "development" if index % 2 else "held-out", "synthetic",
             no_relevant=True, measure_only=True, max_score=NO_STRONG_MATCH)
    for index, (project, setting) in enumerate((p, s) for p in UNKNOWN_PROJECTS for s in SETTINGS):
        emit(setting.ask.format(scope=scope_text(project, ENVIRONMENTS[index % 2])), {}, "unanswerable",
             "development" if index % 2 else "held-out", "synthetic",
             no_relevant=True, max_score=NO_STRONG_MATCH, outcome="xfail")
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
