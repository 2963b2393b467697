"""Build the `wiki-hard` set: the founding `wiki` set's page shapes at scale, 24 services by 8 settings.

Run `python sets/wiki-hard/build.py` from the repository root; it rewrites corpus.jsonl and
queries.jsonl here (then `python -m harness sets pin sets/wiki-hard` records the pins). The
output is a pure function of the tables below and SEED: re-running it gives identical files.

Everything is invented: the wiki of Quillon Labs, a fictional company running 24 services named
after minerals. A topic is one setting (request rate limit, primary region, ...) of one service.
Each topic is a page shaped like the founding `wiki` set's (title, intro, current setup,
operations with a unique setting id, history with the superseded value and its date, a mixed
background passage naming both values) plus an old decision note that still states the
superseded value as if it held. Pages of one setting share every word but the service's name,
the values, the dates and the id, so the other services' pages are near misses for each other;
each service also has an overview page naming every setting, and a catalogue page names all.
About one topic in eight carries a hedged comment nobody can judge.

Queries, every one in English and Italian as in the founding set: the plain question worded like
the page (category `current-fact`), the same question in other words that share no content word
with the page but the service's name (`reworded`; the four are one group), the value on a past
date for half the topics (`historical`, the page and the note relevant) and the current value
asked by the setting's id (`identifier`). Evidence spans and labels follow sets/wiki/build.py.
Splits are drawn per group, seeded, half and half within each setting and category.
"""

from __future__ import annotations

import datetime
import json
import random
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 42
COMPANY = "Quillon Labs"

# The services and what each does (the overview and catalogue pages say it; topic pages do not).
SERVICES = (
    ("Basalt", "the public API gateway"), ("Cobalt", "the billing service"), ("Garnet", "the search service"),
    ("Quartz", "the notification sender for e-mail and push"), ("Jasper", "the user accounts service"),
    ("Onyx", "the file upload service"), ("Pyrite", "the fraud scoring service"),
    ("Feldspar", "the reporting service"), ("Gypsum", "the audit trail service"),
    ("Zircon", "the job scheduler"), ("Topaz", "the checkout service"), ("Agate", "the inventory service"),
    ("Obsidian", "the single sign-on provider"), ("Galena", "the analytics ingest service"),
    ("Calcite", "the pricing engine"), ("Dolomite", "the shipping quote service"),
    ("Malachite", "the support chat backend"), ("Opal", "the image resizing service"),
    ("Spinel", "the feature flag service"), ("Azurite", "the data export service"),
    ("Rutile", "the webhook dispatcher"), ("Cinnabar", "the recommendation service"),
    ("Beryl", "the PDF rendering service"), ("Mica", "the translation service"),
)
OWNERS = ("Atoll", "Fjord", "Mesa", "Delta", "Tundra", "Steppe")
# Each service has two components with pages of their own for the asked settings ("Basalt Worker request rate
# limit"), never asked about: the near-miss services a question naming the service alone must not land on.
COMPONENTS = ("Worker", "Admin", "Relay", "Console", "Batch", "Sync")
COMPONENTS_PER_SERVICE = 2


@dataclass(frozen=True)
class Setting:
    """One setting, worded alike on every service's page: "{s}" is the service, "{value}" / "{old}" values."""

    key: str
    label: str  # "request rate limit": the page title is "{s} {label}"
    values: tuple[str, ...]
    intro: str
    current: str  # the current statement: "{s}", "{value}"
    history: str  # the superseded statement: "{s}", "{old}", "{date}" (the change date)
    mixed: str  # names both values: "{s}", "{old}", "{value}"
    note: str  # the old decision note's statement: "{s}", "{old}"
    ops: str  # day-to-day text, no answer in it: "{s}"
    runbook: str  # what on-call does about it, no value in it: "{s}"
    incident: str  # an incident review's summary naming the setting, no value in it: "{s}", "{other}"
    ask: str = ""  # worded like the page: "{s}" (a sibling setting is never asked)
    ask_it: str = ""
    reworded: tuple[str, ...] = ()  # no content word of the page but "{s}"
    then: str = ""  # the value on a past date: "{s}", "{date}"
    then_it: str = ""
    upgrades: bool = False  # values are in release order and a change only moves forward
    apart_from: str = ""  # the key of a setting whose values (old and current) this one's never equal


SETTINGS = (
    Setting("rate-limit", "request rate limit", ("200", "300", "500", "800", "1,000", "1,500"),
            "This page records the request rate limit that {s} applies to each tenant.",
            "{s} accepts up to {value} requests per second from each tenant; bursts above that get HTTP 429.",
            "Until {date} the request rate limit of {s} was {old} requests per second per tenant.",
            "The rate limit of {s} went from {old} to {value} requests per second after the load tests on the "
            "new ingress nodes.",
            "Decision: the request rate limit of {s} is {old} requests per second per tenant.",
            "Quotas are enforced by the edge proxy in front of {s}; counters reset every second. Tenants who need "
            "more file a quota exception, which expires after thirty days.",
            "Use this when tenants of {s} report HTTP 429 responses. Open the quota dashboard of {s}, find the "
            "tenant and check whether its traffic is a retry loop. Never raise the request rate limit during an "
            "incident; file a quota exception instead.",
            "A retry storm from {other} pushed tenants of {s} over the request rate limit for forty minutes and "
            "many calls got HTTP 429.",
            "What is the request rate limit of {s} per tenant?",
            "Qual è il limite di richieste al secondo per tenant di {s}?",
            ("How many calls can a single customer make to {s} before getting throttled?",
             "How hard may one customer hit {s} before it starts refusing calls?",
             "How much traffic will {s} take from one customer before pushing back?"),
            "What was the request rate limit of {s} per tenant on {date}?",
            "Qual era il limite di richieste al secondo per tenant di {s} il {date}?"),
    Setting("primary-region", "primary region",
            ("eu-west-1 (Ireland)", "eu-central-1 (Frankfurt)", "eu-west-3 (Paris)", "eu-north-1 (Stockholm)",
             "eu-south-1 (Milan)", "us-east-2 (Ohio)"),
            "This page records the cloud region where the primary of {s} runs.",
            "The primary of {s} now lives in {value}, with a standby replica in a second region.",
            "Until {date} the primary region of {s} was {old}.",
            "{s} moved its primary from {old} to {value} to sit next to the services it calls most.",
            "Decision: the primary region of {s} is {old}.",
            "Failover of {s} to the standby is rehearsed twice a year and takes about twenty minutes. Latency "
            "between the two regions is graphed on the network board.",
            "Use this when the primary of {s} is unreachable. Confirm the outage on the network board, then promote "
            "the standby replica in the second region with the failover job and tell the {s} channel.",
            "The primary of {s} was unreachable for twenty minutes after a network fault in its region; {other} "
            "timed out while the standby was promoted.",
            "Which region hosts the primary of {s}?",
            "In quale regione si trova il primario di {s}?",
            ("In which country are the main machines of {s} located?",
             "Where geographically does {s} mainly run?",
             "Which data centre city does {s} mostly run out of?"),
            "Which region hosted the primary of {s} on {date}?",
            "In quale regione si trovava il primario di {s} il {date}?"),
    Setting("log-retention", "log retention", ("7", "14", "30", "45", "90", "180"),
            "This page records how long the application logs of {s} are retained.",
            "Application logs of {s} are kept for {value} days in hot storage and then deleted.",
            "Until {date} the retention of application logs of {s} was {old} days.",
            "Log retention for {s} changed from {old} days to {value} days after the storage review.",
            "Decision: the retention of application logs of {s} is {old} days.",
            "Logs of {s} are shipped as JSON lines and parsed by the central pipeline. A dropped-events alert "
            "fires when more than one percent of lines fail to parse for ten minutes.",
            "Use this when the log pipeline drops events from {s}. Check the parse-failure graph, find the "
            "deploy that changed the format of application logs and roll it back.",
            "Application logs of {s} were dropped for two hours after a format change; the investigation of a "
            "failed payment from {other} found the gap in the logs.",
            "How long is the retention of application logs of {s}?",
            "Per quanto tempo vengono conservati i log applicativi di {s}?",
            ("How far back can we still read what {s} printed while it was running?",
             "For how many weeks can I look up past diagnostic output of {s}?",
             "When does diagnostic output from {s} get thrown away?"),
            "How long was the retention of application logs of {s} on {date}?",
            "Per quanto tempo venivano conservati i log applicativi di {s} il {date}?"),
    Setting("paging-tool", "paging tool",
            ("PagerDuty", "Opsgenie", "Squadcast", "Zenduty", "incident.io", "Grafana OnCall"),
            "This page records how the on-call engineers of {s} are paged.",
            "Alerts for {s} page the on-call engineer through {value}, with escalation to the secondary after "
            "10 minutes.",
            "Until {date} the paging tool of the {s} on-call rotation was {old}.",
            "The {s} rotation left {old} for {value}; escalation rules were copied over unchanged.",
            "Decision: the paging tool of the {s} on-call rotation is {old}.",
            "Shifts of the {s} rotation run Monday to Monday and hand-over happens in the Tuesday stand-up. Swaps "
            "are recorded in the rota spreadsheet at least two days ahead.",
            "Use this when a page for {s} is not acknowledged. The paging tool escalates to the secondary after "
            "10 minutes; if nobody answers, call the engineering manager on duty from the rota spreadsheet.",
            "A page for {s} went unacknowledged because the on-call rotation of {s} still listed an engineer who "
            "had moved to {other}.",
            "Which paging tool does the {s} on-call rotation use?",
            "Quale strumento di paging usa la reperibilità di {s}?",
            ("When {s} breaks at night, what gets somebody out of bed?",
             "Which app buzzes the phone of whoever looks after {s} during an outage?",
             "Via which product do {s} emergencies reach a person?"),
            "Which paging tool did the {s} on-call rotation use on {date}?",
            "Quale strumento di paging usava la reperibilità di {s} il {date}?"),
    Setting("backup-schedule", "backup schedule",
            ("every 15 minutes", "every hour", "every 4 hours", "every 6 hours", "every 12 hours",
             "once a day at midnight"),
            "This page records the backup schedule of the stateful parts of {s}.",
            "Full backups of {s} run {value} and are copied to a second provider within the hour.",
            "Until {date} full backups of {s} ran {old}.",
            "The backup schedule of {s} went from {old} to {value} after the yearly continuity review.",
            "Decision: full backups of {s} run {old}.",
            "Restores of {s} are drilled every quarter. The drill report lists the time to restore and any step "
            "that needed a human.",
            "Use this when a full backup of {s} fails. Rerun the backup job by hand, check that the copy reached "
            "the second provider and note the failure in the storage channel.",
            "Two full backups of {s} failed silently while the storage of {other} was being migrated; the restore "
            "drill caught it.",
            "How often do full backups of {s} run?",
            "Ogni quanto vengono eseguiti i backup completi di {s}?",
            ("How frequently is a safety copy of {s} taken?",
             "How often does {s} get snapshotted for disaster recovery?",
             "How recent is the newest copy of {s} we could fall back on?"),
            "How often did full backups of {s} run on {date}?",
            "Ogni quanto venivano eseguiti i backup completi di {s} il {date}?"),
    Setting("runtime-version", "runtime version", ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"),
            "This page records the runtime version {s} is built and deployed with.",
            "{s} runs on Python {value}; its base image is rebuilt every Monday.",
            "Until {date} the Python version of {s} was Python {old}.",
            "{s} went from Python {old} to Python {value} once its libraries published wheels for it.",
            "Decision: the Python version of {s} is Python {old}.",
            "Dependencies of {s} are pinned with hashes and updated by a weekly bot. Images are scanned before "
            "they reach the registry.",
            "Use this when the base image rebuild of {s} fails. Read the build log, pin the package that broke "
            "and open a ticket for the weekly dependency bot.",
            "A Python upgrade of a shared library broke {s} and {other} at start-up; both were rolled back within "
            "the hour.",
            "Which Python version does {s} run on?",
            "Quale versione di Python usa {s}?",
            ("Which interpreter release executes {s}?",
             "What language release is {s} written against these days?",
             "Which interpreter release do I need locally to hack on {s}?"),
            "Which Python version did {s} use on {date}?",
            "Quale versione di Python usava {s} il {date}?", upgrades=True),
    Setting("queue-broker", "job queue broker",
            ("RabbitMQ", "NATS JetStream", "Apache Kafka", "Redis Streams", "Amazon SQS", "Apache Pulsar"),
            "This page records the broker behind the background job queue of {s}.",
            "Background jobs of {s} are queued in {value} with at-least-once delivery.",
            "Until {date} the job queue broker of {s} was {old}.",
            "{s} moved its jobs from {old} to {value} during the platform consolidation.",
            "Decision: the job queue broker of {s} is {old}.",
            "Workers of {s} scale on queue depth. Poison messages go to a dead-letter stream that the owning team "
            "drains weekly.",
            "Use this when the job queue of {s} backs up. Check the queue depth graph, look for poison messages "
            "in the dead-letter stream and scale the workers if the broker is healthy.",
            "The job queue of {s} backed up for three hours when {other} sent a burst of malformed jobs; the broker "
            "itself stayed healthy.",
            "Which broker does the job queue of {s} use?",
            "Quale broker usa la coda dei job di {s}?",
            ("Where does {s} park tasks it wants done later?",
             "What holds pending tasks of {s} until something picks them up?",
             "Which messaging system carries deferred tasks for {s}?"),
            "Which broker did the job queue of {s} use on {date}?",
            "Quale broker usava la coda dei job di {s} il {date}?"),
    Setting("session-ttl", "session TTL", ("15 minutes", "30 minutes", "1 hour", "4 hours", "8 hours", "24 hours"),
            "This page records how long idle sessions of {s} stay valid.",
            "Idle sessions of {s} expire after {value}; the absolute lifetime is 7 days.",
            "Until {date} the session TTL for idle sessions of {s} was {old}.",
            "Idle expiry of {s} went from {old} to {value} after the session review with support and security.",
            "Decision: the session TTL for idle sessions of {s} is {old}.",
            "Sessions of {s} are stored in a Redis cluster with three shards. Memory alerts fire at 80 percent "
            "and the eviction policy is allkeys-lru.",
            "Use this when users of {s} are logged out unexpectedly. Check the memory graph of the session cache "
            "for evictions and compare the session TTL in the configuration with this wiki.",
            "Users of {s} were logged out every few minutes because the session cache evicted keys under memory "
            "pressure caused by {other}.",
            "What is the session TTL for idle sessions of {s}?",
            "Qual è il TTL di sessione per le sessioni inattive di {s}?",
            ("How much time can I leave {s} untouched before it signs me out?",
             "If a user stops clicking around in {s}, how soon are they signed out?",
             "After how much inactivity does {s} kick a user off?"),
            "What was the session TTL for idle sessions of {s} on {date}?",
            "Qual era il TTL di sessione per le sessioni inattive di {s} il {date}?"),
)

# Settings of every service next to the asked ones, worded like them, never asked: the near misses a real
# wiki holds (the per-IP limit beside the per-tenant one, the event bus beside the job queue, ...).
SIBLINGS = (
    Setting("ip-rate-limit", "per-IP rate limit", ("50", "100", "200", "300", "500", "800"),
            "This page records the request rate limit that {s} applies to each client IP address.",
            "{s} accepts up to {value} requests per second from each client IP address; bursts above that get "
            "HTTP 429.",
            "Until {date} the per-IP rate limit of {s} was {old} requests per second.",
            "The per-IP rate limit of {s} went from {old} to {value} requests per second after a scraping "
            "incident.",
            "Decision: the per-IP rate limit of {s} is {old} requests per second.",
            "The per-IP counters of {s} live in the edge proxy and reset every second. Office addresses are on an "
            "allow list reviewed each quarter.", "", ""),
    Setting("dr-region", "disaster recovery region",
            ("eu-west-1 (Ireland)", "eu-central-1 (Frankfurt)", "eu-west-3 (Paris)", "eu-north-1 (Stockholm)",
             "eu-south-1 (Milan)", "us-east-2 (Ohio)"),
            "This page records the region that holds the disaster recovery copy of {s}.",
            "The disaster recovery copy of {s} is kept in {value} and restored there in the yearly drill.",
            "Until {date} the disaster recovery region of {s} was {old}.",
            "{s} moved its disaster recovery copy from {old} to {value} to keep it away from the primary.",
            "Decision: the disaster recovery region of {s} is {old}.",
            "The recovery plan of {s} is reviewed every spring. Restoring into the recovery region takes about "
            "four hours end to end.", "", "", apart_from="primary-region"),
    Setting("audit-retention", "audit log retention", ("180", "365", "400", "730", "1,095", "2,555"),
            "This page records how long the audit logs of {s} are retained.",
            "Audit logs of {s} are kept for {value} days in cold storage, apart from application logs.",
            "Until {date} the retention of audit logs of {s} was {old} days.",
            "Audit log retention for {s} changed from {old} days to {value} days after the compliance review.",
            "Decision: the retention of audit logs of {s} is {old} days.",
            "Audit logs of {s} are written once and signed. Reading them needs a ticket approved by the security "
            "lead.", "", ""),
    Setting("warning-channel", "warning channel",
            ("#ops-warnings", "#platform-alerts", "#noise", "#watchtower", "#early-signals", "#ops-quiet"),
            "This page records where warnings about {s} that do not page anyone are posted.",
            "Warnings for {s} that do not wake the on-call engineer are posted to {value} in the team chat.",
            "Until {date} the warning channel of {s} was {old}.",
            "Warnings for {s} moved from {old} to {value} when the alert rules were cleaned up.",
            "Decision: the warning channel of {s} is {old}.",
            "The on-call engineer of {s} reads the warning channel at the start of each shift. Warnings that "
            "repeat for a week become tickets.", "", ""),
    Setting("backup-retention", "backup retention", ("7", "14", "30", "35", "60", "90"),
            "This page records how long backups of {s} are kept before they expire.",
            "Backups of {s} are kept for {value} days, then expire on both providers.",
            "Until {date} the backup retention of {s} was {old} days.",
            "Backup retention for {s} went from {old} days to {value} days after the storage cost review.",
            "Decision: the backup retention of {s} is {old} days.",
            "Expired backups of {s} are deleted by a lifecycle rule. Legal holds are set by hand and listed on "
            "the storage board.", "", ""),
    Setting("base-image", "base image",
            ("Debian 11", "Debian 12", "Ubuntu 22.04", "Ubuntu 24.04", "Alpine 3.19", "Alpine 3.20"),
            "This page records the base image the containers of {s} are built on.",
            "Containers of {s} are built on {value}; the image is rebuilt every Monday.",
            "Until {date} the base image of {s} was {old}.",
            "{s} went from {old} to {value} after the yearly image review.",
            "Decision: the base image of {s} is {old}.",
            "Images of {s} are scanned before they reach the registry. A critical finding blocks the deploy until "
            "it is patched or waived.", "", ""),
    Setting("event-bus", "event bus",
            ("RabbitMQ", "NATS JetStream", "Apache Kafka", "Redis Streams", "Amazon SNS", "Apache Pulsar"),
            "This page records the bus that carries the domain events {s} publishes.",
            "Domain events of {s} are published to {value}; other services subscribe to them.",
            "Until {date} the event bus of {s} was {old}.",
            "{s} moved its domain events from {old} to {value} so that consumers could replay them.",
            "Decision: the event bus of {s} is {old}.",
            "Event schemas of {s} are versioned in the schema registry. Breaking changes need a new topic and a "
            "migration note.", "", ""),
    Setting("token-ttl", "API token TTL", ("15 minutes", "30 minutes", "1 hour", "4 hours", "8 hours", "24 hours"),
            "This page records how long API access tokens issued by {s} stay valid.",
            "API access tokens issued by {s} expire after {value}; refresh tokens last 30 days.",
            "Until {date} the TTL of API access tokens issued by {s} was {old}.",
            "The API token TTL of {s} went from {old} to {value} after the security review.",
            "Decision: the TTL of API access tokens issued by {s} is {old}.",
            "Token signing keys of {s} rotate every ninety days. Revoked tokens are listed in a deny list that "
            "every service caches for one minute.", "", ""),
)

# Hedged remarks on about one topic in eight: evidence nobody can judge.
HEDGES = (
    "Someone in the {s} channel said the {label} might change again next quarter; nobody confirmed it.",
    "A comment here says the {label} of {s} should match staging, without saying what staging uses.",
    "An old chat thread suggests {s} may already use a different {label}; it was never checked.",
)
# Every question is asked in English and Italian, as in the founding set: these are the Italian twins of each
# asked setting's reworded questions (same order) and of the identifier questions.
REWORDED_IT = {
    "rate-limit": ("Quante chiamate può fare un singolo cliente a {s} prima di venire rallentato?",
                   "Quanto può insistere un cliente su {s} prima che cominci a rifiutare le chiamate?",
                   "Quanto traffico accetta {s} da un solo cliente prima di opporsi?"),
    "primary-region": ("In quale paese si trovano le macchine principali di {s}?",
                       "Dove gira soprattutto {s}, geograficamente?",
                       "In quale città girano per lo più le macchine di {s}?"),
    "log-retention": ("Fin dove possiamo ancora leggere quello che {s} stampava mentre girava?",
                      "Per quante settimane posso consultare i vecchi messaggi diagnostici di {s}?",
                      "Quando vengono buttati via i messaggi diagnostici di {s}?"),
    "paging-tool": ("Quando {s} si guasta di notte, cosa tira giù qualcuno dal letto?",
                    "Quale app fa vibrare il telefono di chi segue {s} durante un guasto?",
                    "Attraverso quale prodotto le emergenze di {s} raggiungono una persona?"),
    "backup-schedule": ("Con quale frequenza si fa una copia di sicurezza di {s}?",
                        "Ogni quanto si fotografa lo stato di {s} per un ripristino dopo un disastro?",
                        "Quanto è recente la copia più nuova di {s} su cui potremmo ripiegare?"),
    "runtime-version": ("Quale versione dell'interprete esegue {s}?",
                        "Per quale versione del linguaggio è scritto {s} oggi?",
                        "Quale versione dell'interprete mi serve in locale per lavorare su {s}?"),
    "queue-broker": ("Dove parcheggia {s} i compiti da svolgere più tardi?",
                     "Cosa trattiene i compiti in sospeso di {s} finché qualcosa non li prende?",
                     "Quale sistema di messaggistica trasporta i compiti differiti di {s}?"),
    "session-ttl": ("Quanto tempo posso lasciare {s} inattivo prima che mi disconnetta?",
                    "Se un utente smette di cliccare in {s}, dopo quanto viene disconnesso?",
                    "Dopo quanta inattività {s} butta fuori un utente?"),
}
IDENTIFIER_ASKS = ("What is {id} set to now?", "What is the current value of {id}?",
                   "{id}: what does it say today?")
IDENTIFIER_ASKS_IT = ("A cosa è impostato {id} adesso?", "Qual è il valore attuale di {id}?",
                      "{id}: cosa dice oggi?")
FILLER = (f"This page is kept by the platform group of {COMPANY}. Questions go to the platform channel; changes "
          "to this page are reviewed like code and announced in the Friday notes.")
RUNBOOKS = ("Runbooks for this area are linked from the platform index. Alerts name the runbook they belong to, "
            "and every runbook lists who to call when it does not help.")
FIRST_CHANGE = datetime.date(2023, 1, 2)
LAST_CHANGE = datetime.date(2025, 9, 29)


@dataclass(frozen=True)
class Topic:
    service: str
    setting: Setting
    key: str
    setting_id: str
    old: str
    value: str
    changed: str  # ISO date of the change
    asked: str | None  # ISO date a historical question asks about, before `changed`
    hedge: str | None
    reworded: int  # which of the setting's reworded questions (and of their Italian twins) is asked
    identifier_ask: int  # which of IDENTIFIER_ASKS (and IDENTIFIER_ASKS_IT)
    parent: str | None = None  # a component ("Basalt Worker") names the service it belongs to


def fill(template: str, topic: Topic, **extra: str) -> str:
    return template.format(s=topic.service, value=topic.value, old=topic.old, date=topic.changed,
                           label=topic.setting.label, **extra)


def title(topic: Topic) -> str:
    return f"{topic.service} {topic.setting.label}"


def note_title(topic: Topic) -> str:
    return f"Decision: {topic.service} {topic.setting.label}"


def page_text(topic: Topic) -> str:
    """The page: title, intro, current section, operations (with the setting id), history, background."""
    setting = topic.setting
    parts = [
        f"{title(topic)}\n\n{topic.service} is {f'a component of {topic.parent}, ' if topic.parent else ''}a service "
        f"of {COMPANY}; its overview page says what it does and who owns it. {fill(setting.intro, topic)}\n",
        f"## Current setup\n\n{fill(setting.current, topic)}\n",
        f"## Operations\n\n{fill(setting.ops, topic)} {FILLER}\n",
        f"{RUNBOOKS}\n\nSetting ID: {topic.setting_id}\n",
    ]
    if topic.hedge:
        parts.append(f"## Comments\n\n{fill(topic.hedge, topic)}\n")
    parts += [f"## History\n\n{fill(setting.history, topic)}\n", f"## Background\n\n{fill(setting.mixed, topic)}\n"]
    return "\n".join(parts)


def note_text(topic: Topic) -> str:
    """The old decision note: states the superseded value, as notes do once written."""
    return (f"{note_title(topic)}\n\nStatus: accepted. Author: platform group.\n\n{fill(topic.setting.note, topic)}"
            f"\n\nContext: the {topic.setting.label} of {topic.service} needed one agreed setting. Alternatives "
            "were discussed in the architecture review and this one was chosen.\n")


def overview_text(service: str, role: str, owner: str, components: list[str]) -> str:
    labels = [setting.label for setting in SETTINGS]
    return (f"{service} overview\n\n{service} is {role} at {COMPANY}, owned by the {owner} team. Its settings "
            f"have one page each: {', '.join(labels[:-1])} and {labels[-1]}. Its components "
            f"{' and '.join(components)} have setting pages of their own.\n\n## Owners\n\nThe {owner} team "
            f"answers questions about {service} in its own channel and reviews every change to its pages.\n\n"
            f"## Dependencies\n\n{service} is deployed by the shared pipeline and monitored on the platform "
            "dashboards like every other service.\n")


def general_pages() -> dict[str, str]:
    catalogue = "\n".join(f"- {service}: {role}" for service, role in SERVICES)
    return {
        "page-service-catalogue": f"Service catalogue\n\nEvery service of {COMPANY}, by name:\n\n{catalogue}\n",
        "page-onboarding": "Onboarding\n\nIn your first week: get a hardware key, join the platform channel, read "
                           "the incident response page and shadow one on-call shift. Ask your buddy anything.\n",
        "page-wiki-conventions": "Wiki conventions\n\nEvery page keeps its current setup at the top and moves "
                                 "superseded settings to a History section with the date they changed. Every "
                                 "setting page carries a setting ID of the form QL-nnnn. Decision notes are never "
                                 "edited after acceptance, so they may be out of date.\n",
    }


def span(doc_id: str, text: str, snippet: str, label: str, supports: bool) -> dict[str, object]:
    start = text.find(snippet)
    if start < 0 or text.find(snippet, start + 1) >= 0:
        raise SystemExit(f"{doc_id}: span must occur exactly once: {snippet!r}")
    return {"doc": doc_id, "start": start, "end": start + len(snippet), "text": snippet, "label": label,
            "supports_answer": supports}


def values(rng: random.Random, setting: Setting) -> tuple[str, str]:
    """The superseded and the current value: two of the pool, the older release first for an upgrade."""
    old, value = rng.sample(setting.values, 2)
    if setting.upgrades and setting.values.index(old) > setting.values.index(value):
        return value, old
    return old, value


def topics(rng: random.Random) -> list[Topic]:
    """Every setting (asked or sibling) of every service, then the asked settings of its components: values,
    dates, id, whether asked on a past date."""
    numbers = rng.sample([n for n in range(1000, 10000) if not 1900 <= n <= 2100],
                         len(SERVICES) * (len(SETTINGS) * (1 + COMPONENTS_PER_SERVICE) + len(SIBLINGS)))
    days = (LAST_CHANGE - FIRST_CHANGE).days
    made: list[Topic] = []
    for setting in SETTINGS + SIBLINGS:
        asked = setting in SETTINGS
        then_services = set(rng.sample([service for service, _ in SERVICES], len(SERVICES) // 2))
        for service, _ in SERVICES:
            old, value = values(rng, setting)
            if setting.apart_from:  # the disaster recovery copy never sits in the primary's region, then or now
                (other,) = [t for t in made if t.service == service and t.setting.key == setting.apart_from]
                while {old, value} & {other.old, other.value}:
                    old, value = values(rng, setting)
            changed = FIRST_CHANGE + datetime.timedelta(days=rng.randrange(days))
            then = changed - datetime.timedelta(days=rng.randrange(20, 400))
            hedge = rng.choice(HEDGES) if asked and rng.randrange(8) == 0 else None
            made.append(Topic(service, setting, f"{service.lower()}-{setting.key}",
                              f"QL-{numbers[len(made)]}", old, value, changed.isoformat(),
                              then.isoformat() if asked and service in then_services else None, hedge,
                              rng.randrange(len(setting.reworded)) if asked else 0,
                              rng.randrange(len(IDENTIFIER_ASKS)) if asked else 0))
    for service, _ in SERVICES:
        for suffix in rng.sample(COMPONENTS, COMPONENTS_PER_SERVICE):
            name = f"{service} {suffix}"
            for setting in SETTINGS:
                old, value = values(rng, setting)
                changed = FIRST_CHANGE + datetime.timedelta(days=rng.randrange(days))
                made.append(Topic(name, setting, f"{name.lower().replace(' ', '-')}-{setting.key}",
                                  f"QL-{numbers[len(made)]}", old, value, changed.isoformat(), None, None, 0, 0,
                                  parent=service))
    return made


def incidents(rng: random.Random, asked: list[Topic]) -> list[dict]:
    """Incident reviews: about half the asked topics had one, naming a second service; no value is stated."""
    services = [service for service, _ in SERVICES]
    days = (LAST_CHANGE - FIRST_CHANGE).days
    reviews = []
    for topic in asked:
        if rng.randrange(2):
            continue
        other = rng.choice([service for service in services if service != topic.service])
        date = (FIRST_CHANGE + datetime.timedelta(days=rng.randrange(days))).isoformat()
        summary = topic.setting.incident.format(s=topic.service, other=other)
        text = (f"Incident review {date}: {topic.service}\n\nServices: {topic.service}, {other}.\n\n## Summary\n\n"
                f"{summary}\n\n## Actions\n\nThe owners of {topic.service} added an alert and linked this review "
                f"from the {topic.setting.label} page of {topic.service}. Follow-up tickets are tracked on the "
                "reliability board.\n")
        reviews.append({"id": f"incident-{date}-{topic.key}", "title": f"Incident review {date}: {topic.service}",
                        "text": text})
    return reviews


def splits(rng: random.Random, all_topics: list[Topic]) -> dict[str, str]:
    """Group -> split: within each setting and kind of group, a seeded half of the groups each way."""
    chosen: dict[str, str] = {}
    for setting in SETTINGS:
        own = [topic for topic in all_topics if topic.setting is setting]
        for kind, groups in (("current", [f"{t.key}-current" for t in own]),
                             ("then", [f"{t.key}-then" for t in own if t.asked]),
                             ("id", [f"{t.key}-id" for t in own])):
            rng.shuffle(groups)
            for index, group in enumerate(groups):
                chosen[group] = "development" if index % 2 == 0 else "held-out"
    return chosen


def build() -> tuple[list[dict], list[dict]]:
    rng = random.Random(SEED)
    every_topic = topics(rng)
    all_topics = [topic for topic in every_topic if topic.setting in SETTINGS and not topic.parent]
    split_of = splits(rng, all_topics)
    corpus: list[dict] = []
    queries: list[dict] = []

    def emit(qid: str, text: str, relevant: dict[str, int], category: str, group: str, source: str, intent: str,
             canonical: str, evidence: list[dict]) -> None:
        queries.append({"qid": f"wiki-hard-{qid}", "query": text, "relevant": relevant, "category": category,
                        "split": split_of[group], "source": source, "group": group, "intent": intent,
                        "canonical": [canonical], "evidence": evidence})

    for topic in all_topics:
        setting = topic.setting
        page_id, note_id = f"page-{topic.key}", f"note-{topic.key}"
        page, note = page_text(topic), note_text(topic)
        corpus += [{"id": page_id, "title": title(topic), "text": page},
                   {"id": note_id, "title": note_title(topic), "text": note}]
        current_statement, history = fill(setting.current, topic), fill(setting.history, topic)
        mixed, decision = fill(setting.mixed, topic), fill(setting.note, topic)
        current = [span(page_id, page, current_statement, "current", True),
                   span(page_id, page, history, "stale", True),
                   span(page_id, page, mixed, "mixed", True),
                   span(note_id, note, decision, "stale", True)]
        if topic.hedge:
            current.append(span(page_id, page, fill(topic.hedge, topic), "unjudgeable", False))
        group = f"{topic.key}-current"
        for suffix, text, category, source in (
                ("en", fill(setting.ask, topic), "current-fact", "synthetic"),
                ("it", fill(setting.ask_it, topic), "current-fact", "translation"),
                ("reworded", fill(setting.reworded[topic.reworded], topic), "reworded", "paraphrase"),
                ("reworded-it", fill(REWORDED_IT[setting.key][topic.reworded], topic), "reworded", "translation")):
            emit(f"{topic.key}-{suffix}", text, {page_id: 1}, category, group, source, "current", page_id, current)
        if topic.asked:
            # Relative to the asked date the superseded value is the right one; the present one is neither.
            then = [span(page_id, page, history, "current", True),
                    span(note_id, note, decision, "current", True),
                    span(page_id, page, mixed, "mixed", True),
                    span(page_id, page, current_statement, "neither", False)]
            for suffix, template, source in (("en", setting.then, "synthetic"), ("it", setting.then_it,
                                                                                  "translation")):
                emit(f"{topic.key}-then-{suffix}", template.format(s=topic.service, date=topic.asked),
                     {page_id: 1, note_id: 1}, "historical", f"{topic.key}-then", source, "historical", page_id,
                     then)
        for suffix, asks, source in (("id", IDENTIFIER_ASKS, "synthetic"), ("id-it", IDENTIFIER_ASKS_IT,
                                                                            "translation")):
            emit(f"{topic.key}-{suffix}", asks[topic.identifier_ask].format(id=topic.setting_id), {page_id: 1},
                 "identifier", f"{topic.key}-id", source, "current", page_id, current)
    for topic in every_topic:
        if topic.setting in SIBLINGS or topic.parent:
            corpus += [{"id": f"page-{topic.key}", "title": title(topic), "text": page_text(topic)},
                       {"id": f"note-{topic.key}", "title": note_title(topic), "text": note_text(topic)}]
        else:
            corpus.append({"id": f"runbook-{topic.key}", "title": f"Runbook: {title(topic)}",
                           "text": f"Runbook: {title(topic)}\n\n{fill(topic.setting.runbook, topic)}\n\n{RUNBOOKS}\n"})
    corpus += incidents(rng, all_topics)
    components: dict[str, list[str]] = {}
    for topic in every_topic:
        if topic.parent and topic.service not in components.setdefault(topic.parent, []):
            components[topic.parent].append(topic.service)
    for number, (service, role) in enumerate(SERVICES):
        corpus.append({"id": f"page-{service.lower()}-overview", "title": f"{service} overview",
                       "text": overview_text(service, role, OWNERS[number % len(OWNERS)], components[service])})
    for doc_id, text in general_pages().items():
        corpus.append({"id": doc_id, "title": text.split("\n", 1)[0], "text": text})
    return corpus, queries


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    corpus, queries = build()
    write_jsonl(HERE / "corpus.jsonl", corpus)
    write_jsonl(HERE / "queries.jsonl", queries)
    print(f"wiki-hard: {len(corpus)} pages, {len(queries)} queries")


if __name__ == "__main__":
    main()
