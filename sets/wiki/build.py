"""Build the `wiki` set: a fictional team wiki whose facts changed, with reviewed evidence spans.

Run `python sets/wiki/build.py` from the repository root; it rewrites corpus.jsonl and
queries.jsonl here (then `python -m harness sets pin wiki` records the pins). Every span's
offsets are computed from its text, which must occur exactly once in its page, so no offset
is typed by hand. Everything here is invented: the Larkspur platform team of Corvid Systems.

Each topic is a page with a current statement, filler about day-to-day operation, a History
section with the superseded statement and a Background passage that mentions both values
(mixed), plus an old decision note that still states the superseded value as if it held.
Queries come as English and Italian pairs (one group each), asking for the current value, and
for some topics the value on a past date (historical intent, labels relative to that date).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Topic:
    key: str
    title: str  # the page title; the page id is `page-<key>`
    intro: str
    current: str  # the current statement (label current, supports the answer)
    history: str  # the superseded statement, in the History section
    mixed: str  # explains the change: names both values
    note_title: str  # the old decision note, id `note-<key>`
    note: str  # states the superseded value as if it held
    ops: str  # day-to-day text, no answer in it
    q_en: str
    q_it: str
    hist: tuple[str, str, str] | None = None  # (ISO date, English, Italian) asking the value then
    unjudgeable: str | None = None  # a hedged remark on the page: evidence nobody can judge


TOPICS = [
    Topic("gateway-rate-limit", "Kestrel API gateway",
          "The Kestrel API gateway fronts every public endpoint of the Kestrel product and applies tenant quotas.",
          "Tenants may send up to 500 requests per second each; bursts above that get HTTP 429.",
          "Until 2024-03-04 the request rate limit of the Kestrel API gateway was 300 requests per second per tenant.",
          "The rate limit went from 300 to 500 requests per second when the gateway moved to the new ingress nodes.",
          "Decision: Kestrel API gateway rate limit",
          "Decision: the request rate limit of the Kestrel API gateway is 300 requests per second per tenant.",
          "Gateway nodes are deployed with the kestrel-edge chart. Certificates rotate automatically every sixty days "
          "and the on-call engineer checks the rotation dashboard on Mondays.",
          "What is the request rate limit of the Kestrel API gateway per tenant?",
          "Qual è il limite di richieste al secondo per tenant del gateway API Kestrel?",
          ("2023-11-15", "What was the Kestrel API gateway rate limit per tenant on 2023-11-15?",
           "Qual era il limite di richieste del gateway API Kestrel per tenant il 2023-11-15?")),
    Topic("db-primary-region", "Ledger database",
          "The Ledger database holds invoices and payments for Kestrel and is run by the Larkspur platform team.",
          "The primary now lives in eu-west-3 (Paris), with a synchronous replica in eu-west-1.",
          "Until 2024-06-10 the primary region of the Ledger database was eu-central-1 (Frankfurt).",
          "We moved the Ledger primary from eu-central-1 to eu-west-3 to sit next to the payment processor.",
          "Decision: Ledger database primary region",
          "Decision: the primary region of the Ledger database is eu-central-1 (Frankfurt).",
          "Schema migrations go through the ledger-migrate job and need two approvals. Vacuum runs nightly at "
          "02:00 UTC; its duration is graphed on the storage board.",
          "Which region hosts the primary of the Ledger database?",
          "In quale regione si trova il primario del database Ledger?",
          ("2024-01-20", "Which region hosted the Ledger database primary on 2024-01-20?",
           "In quale regione era il primario del database Ledger il 2024-01-20?")),
    Topic("oncall-tool", "On-call paging",
          "Paging for the Larkspur platform team goes to whoever holds the primary on-call shift that week.",
          "Pages are sent through Beacon, our self-hosted alert router, with escalation after 10 minutes.",
          "Until 2023-09-01 the paging tool of the on-call rotation was PagerDuty.",
          "We left PagerDuty for Beacon in 2023 to cut licence costs; escalation rules were copied over unchanged.",
          "Decision: paging tool for the on-call rotation",
          "Decision: the paging tool of the on-call rotation is PagerDuty, with escalation after 10 minutes.",
          "Shifts run Monday to Monday and hand-over happens in the Tuesday stand-up. Swaps are recorded in the "
          "rota spreadsheet at least two days ahead.",
          "Which paging tool does the on-call rotation use?",
          "Quale strumento di paging usa la rotazione di reperibilità?",
          ("2023-05-02", "Which paging tool did the on-call rotation use on 2023-05-02?",
           "Quale strumento di paging usava la rotazione di reperibilità il 2023-05-02?")),
    Topic("log-retention", "Log pipeline",
          "The log pipeline ships application logs from every cluster into the central search store.",
          "Logs are now kept for 45 days in hot storage and then deleted.",
          "Until 2024-02-01 the retention of application logs in the log pipeline was 90 days.",
          "Retention dropped from 90 days to 45 days after the storage review found most searches cover one week.",
          "Decision: application log retention",
          "Decision: the retention of application logs in the log pipeline is 90 days.",
          "Parsers are written as Vector transforms and reviewed like code. A dropped-events alert fires when more "
          "than one percent of lines fail to parse for ten minutes.",
          "How long is the retention of application logs in the log pipeline?",
          "Per quanto tempo vengono conservati i log applicativi nella pipeline dei log?",
          unjudgeable="Someone in chat mentioned retention might change again soon; nobody confirmed it."),
    Topic("ci-runner", "Continuous integration",
          "Every repository of the Larkspur team builds on the shared continuous integration service.",
          "Builds run on self-hosted Forgejo runners with 16 cores and 64 GB of memory each.",
          "Until 2024-04-15 the CI runners of the continuous integration service were GitHub-hosted runners with 4 cores.",
          "The switch from 4-core GitHub-hosted runners to 16-core Forgejo runners halved the median build time.",
          "Decision: CI runners",
          "Decision: the CI runners of the continuous integration service are GitHub-hosted runners with 4 cores.",
          "Caches are keyed by the lockfile hash. Flaky tests are quarantined with a label and must be fixed within "
          "a sprint.",
          "What kind of CI runners does the continuous integration service use?",
          "Che tipo di runner CI usa il servizio di integrazione continua?"),
    Topic("deploy-window", "Release process",
          "Releases of Kestrel follow the release process owned by the Larkspur platform team.",
          "Production deploys are allowed Monday to Thursday, 09:00 to 16:00 Paris time.",
          "Until 2023-12-01 the production deploy window of the release process was Tuesday and Thursday mornings only.",
          "The deploy window widened from Tuesday and Thursday mornings to Monday to Thursday once canaries became automatic.",
          "Decision: production deploy window",
          "Decision: the production deploy window of the release process is Tuesday and Thursday mornings only.",
          "Release notes are drafted from merged pull requests by the release bot. A release captain is chosen "
          "each week and owns the rollback decision.",
          "When is the production deploy window of the release process?",
          "Quando è la finestra di rilascio in produzione del processo di release?",
          ("2023-10-10", "What was the production deploy window of the release process on 2023-10-10?",
           "Qual era la finestra di rilascio in produzione del processo di release il 2023-10-10?")),
    Topic("cache-ttl", "Session cache",
          "The session cache keeps login sessions for the Kestrel web app in a Redis cluster.",
          "Idle sessions expire after 8 hours; the absolute lifetime is 7 days.",
          "Until 2024-05-20 the session cache TTL for idle sessions was 30 minutes.",
          "Idle expiry went from 30 minutes to 8 hours after support tickets about surprise log-outs.",
          "Decision: session cache TTL",
          "Decision: the session cache TTL for idle sessions is 30 minutes.",
          "The cluster has three shards with one replica each. Memory alerts fire at 80 percent and the eviction "
          "policy is allkeys-lru.",
          "What is the session cache TTL for idle sessions?",
          "Qual è il TTL della cache di sessione per le sessioni inattive?"),
    Topic("incident-commander", "Incident response",
          "Incident response at Corvid Systems follows the severity ladder written by the Larkspur team.",
          "For severity 1 incidents the incident commander is the engineering manager on duty, never the person paged.",
          "Until 2024-01-08 the incident commander for severity 1 incidents was the paged on-call engineer.",
          "We stopped making the paged on-call engineer the commander, and moved the role to the engineering manager "
          "on duty, because the paged person was also debugging.",
          "Decision: incident commander for severity 1",
          "Decision: the incident commander for severity 1 incidents is the paged on-call engineer.",
          "Each incident gets a channel named after its ticket. A status update goes out every thirty minutes until "
          "mitigation, and the review is held within five working days.",
          "Who is the incident commander for severity 1 incidents?",
          "Chi è il comandante dell'incidente per gli incidenti di severità 1?"),
    Topic("backup-schedule", "Backups",
          "Backups cover every stateful service of the Larkspur platform: databases, object stores and the wiki itself.",
          "Full backups run every 6 hours and are copied to a second provider within the hour.",
          "Until 2023-08-14 the backup schedule for full backups was once a day at midnight.",
          "Moving from a daily midnight backup to one every 6 hours cut the worst-case data loss from a day to six hours.",
          "Decision: backup schedule",
          "Decision: the backup schedule for full backups is once a day at midnight.",
          "Restore drills happen every quarter on a random service. The drill report lists the time to restore and "
          "any step that needed a human.",
          "How often do full backups run in the backup schedule?",
          "Ogni quanto vengono eseguiti i backup completi?",
          ("2023-03-30", "How often did full backups run on 2023-03-30?",
           "Ogni quanto venivano eseguiti i backup completi il 2023-03-30?")),
    Topic("python-version", "Service runtime",
          "Backend services of the Larkspur team share one base image and one supported runtime.",
          "Services run on Python 3.12; the base image is rebuilt every Monday.",
          "Until 2024-07-01 the Python version of the service runtime was Python 3.10.",
          "The runtime went from Python 3.10 to Python 3.12 once our numeric libraries published wheels for it.",
          "Decision: Python version for services",
          "Decision: the Python version of the service runtime is Python 3.10.",
          "Dependencies are pinned with hashes and updated by a weekly bot. Images are scanned before they reach "
          "the registry.",
          "Which Python version does the service runtime use?",
          "Quale versione di Python usa il runtime dei servizi?"),
    Topic("vpn-provider", "Remote access",
          "Engineers reach internal tools through the remote access service when they are off the office network.",
          "Remote access goes through Tailnet, with device posture checks before every connection.",
          "Until 2024-02-19 the VPN provider for remote access was OpenVPN on a bastion host.",
          "Replacing the OpenVPN bastion with Tailnet removed the single bastion host and added posture checks.",
          "Decision: VPN provider",
          "Decision: the VPN provider for remote access is OpenVPN on a bastion host.",
          "New laptops are enrolled by IT on the first day. Lost devices must be reported in the security channel "
          "within an hour.",
          "Which VPN provider is used for remote access?",
          "Quale fornitore VPN si usa per l'accesso remoto?"),
    Topic("code-review", "Code review",
          "Every change to a Larkspur repository is reviewed before merge.",
          "Merging needs two approvals, one of them from a code owner of the touched paths.",
          "Until 2023-11-06 the number of code review approvals needed to merge was one.",
          "We went from one approval to two after an outage caused by a change nobody else had read closely.",
          "Decision: code review approvals",
          "Decision: the number of code review approvals needed to merge is one.",
          "Reviewers aim to answer within one working day. Draft pull requests are not reviewed until marked ready.",
          "How many code review approvals are needed to merge?",
          "Quante approvazioni di code review servono per fare il merge?",
          ("2023-07-12", "How many code review approvals were needed to merge on 2023-07-12?",
           "Quante approvazioni di code review servivano per il merge il 2023-07-12?")),
    Topic("metrics-store", "Metrics",
          "Service metrics from every cluster land in one long-term metrics store with shared dashboards.",
          "Metrics are stored in VictoriaMetrics, kept for 13 months at one-minute resolution.",
          "Until 2024-03-25 the long-term metrics store was Thanos on object storage.",
          "Moving from Thanos to VictoriaMetrics cut query latency on the big dashboards by about half.",
          "Decision: long-term metrics store",
          "Decision: the long-term metrics store is Thanos on object storage.",
          "Recording rules live beside the dashboards that use them. Cardinality above one million series per "
          "service needs a review.",
          "Which long-term metrics store do we use?",
          "Quale archivio di metriche a lungo termine usiamo?"),
    Topic("sla-uptime", "Service level objectives",
          "Service level objectives of Kestrel are agreed each year with the product and support leads.",
          "The availability objective for the public API is 99.95 percent over a rolling 28 days.",
          "Until 2024-01-01 the availability SLO of the public API was 99.9 percent per calendar month.",
          "The objective tightened from 99.9 percent per month to 99.95 percent over 28 rolling days in the 2024 plan.",
          "Decision: public API availability SLO",
          "Decision: the availability SLO of the public API is 99.9 percent per calendar month.",
          "Error budgets are reviewed in the monthly operations meeting. A burned budget freezes feature releases "
          "for the service until it recovers.",
          "What is the availability SLO of the public API?",
          "Qual è l'SLO di disponibilità dell'API pubblica?",
          ("2023-09-18", "What was the availability SLO of the public API on 2023-09-18?",
           "Qual era l'SLO di disponibilità dell'API pubblica il 2023-09-18?")),
    Topic("secrets-manager", "Secrets",
          "Secrets for services and pipelines are never stored in repositories; they come from one secrets manager.",
          "Secrets are served by OpenBao, with leases renewed by the sidecar every hour.",
          "Until 2024-08-05 the secrets manager for services was HashiCorp Vault.",
          "We moved from HashiCorp Vault to OpenBao, its community fork, when the licence changed.",
          "Decision: secrets manager",
          "Decision: the secrets manager for services is HashiCorp Vault.",
          "Rotation of database passwords is automatic. Human access to production secrets needs a ticket and is "
          "logged.",
          "Which secrets manager do services use?",
          "Quale gestore di segreti usano i servizi?"),
    Topic("sprint-length", "Planning",
          "The Larkspur team plans work in sprints with a demo at the end of each.",
          "Sprints last three weeks, starting on a Wednesday.",
          "Until 2023-10-04 the sprint length of the team was two weeks.",
          "We lengthened sprints from two weeks to three weeks because too much time went into planning rituals.",
          "Decision: sprint length",
          "Decision: the sprint length of the team is two weeks.",
          "The backlog is groomed on the Monday before planning. Unplanned work is tracked with a label so the demo "
          "can show it.",
          "How long is a sprint for the team?",
          "Quanto dura uno sprint del team?"),
    Topic("object-storage", "Object storage",
          "Uploaded files, exports and build artefacts go to the object storage service.",
          "Objects are stored in Garage, a self-hosted S3-compatible store spread over three sites.",
          "Until 2024-05-06 the object storage backend was Amazon S3 in eu-central-1.",
          "Leaving Amazon S3 for Garage cut egress costs; the S3 API stayed the same for applications.",
          "Decision: object storage backend",
          "Decision: the object storage backend is Amazon S3 in eu-central-1.",
          "Buckets are created through a pull request to the storage repository. Lifecycle rules expire build "
          "artefacts after thirty days.",
          "What is the object storage backend?",
          "Qual è il backend di archiviazione degli oggetti?",
          unjudgeable="A comment on this page says the backend 'should be the same as staging', without saying which."),
    Topic("password-policy", "Account security",
          "Staff accounts follow the account security policy set by the security lead.",
          "Passwords need at least 14 characters and a hardware key is required for every staff account.",
          "Until 2023-06-19 the minimum password length for staff accounts was 10 characters.",
          "The minimum length grew from 10 characters to 14 characters when hardware keys became mandatory.",
          "Decision: minimum password length",
          "Decision: the minimum password length for staff accounts is 10 characters.",
          "Accounts of people who leave are disabled the same day by the identity sync. Shared accounts are not "
          "allowed.",
          "What is the minimum password length for staff accounts?",
          "Qual è la lunghezza minima della password per gli account del personale?"),
    Topic("queue-system", "Job queue",
          "Background jobs of Kestrel, such as invoice rendering and e-mail, go through the job queue.",
          "Jobs are queued in NATS JetStream with at-least-once delivery.",
          "Until 2024-04-29 the job queue broker was RabbitMQ.",
          "Moving from RabbitMQ to NATS JetStream gave us replay of old messages and simpler clustering.",
          "Decision: job queue broker",
          "Decision: the job queue broker is RabbitMQ.",
          "Workers scale on queue depth. Poison messages go to a dead-letter stream that the owning team drains "
          "weekly.",
          "Which broker does the job queue use?",
          "Quale broker usa la coda dei job?",
          ("2024-02-14", "Which broker did the job queue use on 2024-02-14?",
           "Quale broker usava la coda dei job il 2024-02-14?")),
    Topic("frontend-framework", "Web front end",
          "The Kestrel web front end is a single-page app served from the edge.",
          "The front end is written in SvelteKit with server-side rendering for the public pages.",
          "Until 2023-12-11 the web front end framework was AngularJS.",
          "The rewrite from AngularJS to SvelteKit finished in December 2023, page by page behind a flag.",
          "Decision: web front end framework",
          "Decision: the web front end framework is AngularJS.",
          "Design tokens come from the shared design system package. Visual regression tests run on every pull "
          "request.",
          "Which web front end framework does Kestrel use?",
          "Quale framework usa il front end web di Kestrel?"),
    Topic("support-hours", "Customer support",
          "Customer support answers tickets from Kestrel customers and escalates to engineering.",
          "Support is staffed 07:00 to 22:00 CET on weekdays and 09:00 to 17:00 on weekends.",
          "Until 2024-09-02 the customer support hours were 09:00 to 18:00 CET on weekdays only.",
          "Support hours grew from weekdays 09:00 to 18:00 to seven days a week after the Asian launch.",
          "Decision: customer support hours",
          "Decision: the customer support hours are 09:00 to 18:00 CET on weekdays only.",
          "Escalations to engineering use the support-escalation form. A ticket waiting more than a day is flagged "
          "in the morning report.",
          "What are the customer support hours?",
          "Quali sono gli orari dell'assistenza clienti?"),
    Topic("cluster-version", "Kubernetes clusters",
          "All services run on the Kubernetes clusters managed by the Larkspur platform team.",
          "Clusters run Kubernetes 1.30, upgraded one minor version each quarter.",
          "Until 2024-10-07 the Kubernetes version of the clusters was 1.27.",
          "We jumped from Kubernetes 1.27 to 1.30 over three quarters, one minor version each time.",
          "Decision: Kubernetes version",
          "Decision: the Kubernetes version of the clusters is 1.27.",
          "Node pools are split by workload: general, memory-heavy and batch. Cluster add-ons are managed from "
          "one repository with a change freeze in December.",
          "Which Kubernetes version do the clusters run?",
          "Quale versione di Kubernetes usano i cluster?"),
    Topic("dns-provider", "DNS",
          "Public and internal DNS zones of Corvid Systems are managed as code by the platform team.",
          "Public zones are served by deSEC, with records managed through OctoDNS.",
          "Until 2023-07-24 the DNS provider for public zones was Route 53.",
          "Public zones moved from Route 53 to deSEC; the OctoDNS files did not change apart from the provider block.",
          "Decision: DNS provider",
          "Decision: the DNS provider for public zones is Route 53.",
          "Record changes go through review like any code. TTLs on apex records stay at one hour so rollbacks are "
          "quick.",
          "Which DNS provider serves the public zones?",
          "Quale provider DNS serve le zone pubbliche?"),
    Topic("cost-alert", "Cloud costs",
          "Cloud spending of the Larkspur team is tracked daily against the quarterly budget.",
          "An alert goes to the team lead when daily spend exceeds 1,800 euros.",
          "Until 2024-06-24 the daily cloud cost alert threshold was 1,200 euros.",
          "The cost alert threshold rose from 1,200 euros to 1,800 euros when the Asian region opened.",
          "Decision: daily cloud cost alert threshold",
          "Decision: the daily cloud cost alert threshold is 1,200 euros.",
          "Untagged resources are listed in the weekly cost report. Idle development environments are stopped "
          "every night at 20:00.",
          "What is the daily cloud cost alert threshold?",
          "Qual è la soglia dell'allarme sui costi cloud giornalieri?"),
    Topic("team-lead", "Larkspur team",
          "The Larkspur team builds and runs the shared platform of Corvid Systems.",
          "The team is led by Ines Okafor, who also chairs the architecture review.",
          "Until 2024-03-11 the lead of the Larkspur team was Tomas Brandt.",
          "Tomas Brandt handed the lead of the team to Ines Okafor when he moved to the data group.",
          "Decision: Larkspur team lead",
          "Decision: the lead of the Larkspur team is Tomas Brandt.",
          "The team sits in the Lyon office and meets in person on Wednesdays. New joiners get a buddy for their "
          "first month.",
          "Who is the lead of the Larkspur team?",
          "Chi è il responsabile del team Larkspur?",
          ("2023-12-20", "Who was the lead of the Larkspur team on 2023-12-20?",
           "Chi era il responsabile del team Larkspur il 2023-12-20?")),
]

SECTION_OPS = "Operations"
FILLER = ("This page is kept by the Larkspur platform team. Questions go to the platform channel; changes to "
          "this page are reviewed like code and announced in the Friday notes.")


def page_text(topic: Topic) -> str:
    """The page: title, intro, current section, operations, history, background (mixed)."""
    parts = [
        f"{topic.title}\n\n{topic.intro}\n",
        f"## Current setup\n\n{topic.current}\n",
        f"## {SECTION_OPS}\n\n{topic.ops} {FILLER}\n",
        "Runbooks for this area are linked from the platform index. Alerts name the runbook they belong to, "
        "and every runbook lists who to call when it does not help.\n",
    ]
    if topic.unjudgeable:
        parts.append(f"## Comments\n\n{topic.unjudgeable}\n")
    parts += [f"## History\n\n{topic.history}\n", f"## Background\n\n{topic.mixed}\n"]
    return "\n".join(parts)


def note_text(topic: Topic) -> str:
    """The old decision note: states the superseded value, as notes do once written."""
    return (f"{topic.note_title}\n\nStatus: accepted. Author: platform team.\n\n{topic.note}\n\n"
            f"Context: the {topic.title.lower()} needed one agreed setting. Alternatives were discussed in the "
            f"architecture review and this one was chosen.\n")


GENERAL_PAGES = {
    "page-glossary": "Glossary\n\nKestrel is our customer-facing product. Larkspur is the platform team. Beacon, "
                     "Tailnet, Garage and OpenBao are tools we run ourselves. Ledger is the billing database.\n",
    "page-onboarding": "Onboarding\n\nIn your first week: get a hardware key, join the platform channel, read the "
                       "incident response page and shadow one on-call shift. Ask your buddy anything.\n",
    "page-wiki-conventions": "Wiki conventions\n\nEvery page keeps its current setup at the top and moves "
                             "superseded settings to a History section with the date they changed. Decision notes "
                             "are never edited after acceptance, so they may be out of date.\n",
}


def span(doc_id: str, text: str, snippet: str, label: str, supports: bool) -> dict[str, object]:
    start = text.find(snippet)
    if start < 0 or text.find(snippet, start + 1) >= 0:
        raise SystemExit(f"{doc_id}: span must occur exactly once: {snippet!r}")
    return {"doc": doc_id, "start": start, "end": start + len(snippet), "text": snippet, "label": label,
            "supports_answer": supports}


def build() -> tuple[list[dict], list[dict]]:
    corpus: list[dict] = []
    queries: list[dict] = []
    for number, topic in enumerate(TOPICS):
        page_id, note_id = f"page-{topic.key}", f"note-{topic.key}"
        page, note = page_text(topic), note_text(topic)
        corpus += [{"id": page_id, "title": topic.title, "text": page},
                   {"id": note_id, "title": topic.note_title, "text": note}]
        split = "development" if number % 2 == 0 else "held-out"
        current = [span(page_id, page, topic.current, "current", True),
                   span(page_id, page, topic.history, "stale", True),
                   span(page_id, page, topic.mixed, "mixed", True),
                   span(note_id, note, topic.note, "stale", True)]
        if topic.unjudgeable:
            current.append(span(page_id, page, topic.unjudgeable, "unjudgeable", False))
        for language, text in (("en", topic.q_en), ("it", topic.q_it)):
            queries.append({"qid": f"wiki-{topic.key}-{language}", "query": text, "relevant": {page_id: 1},
                            "category": "current-fact", "split": split, "source": "synthetic" if language == "en"
                            else "translation", "group": f"{topic.key}-current", "intent": "current",
                            "canonical": [page_id], "evidence": current})
        if topic.hist is not None:
            date, english, italian = topic.hist
            # Relative to the asked date the superseded value is the right one; the present one is neither.
            then = [span(page_id, page, topic.history, "current", True),
                    span(note_id, note, topic.note, "current", True),
                    span(page_id, page, topic.mixed, "mixed", True),
                    span(page_id, page, topic.current, "neither", False)]
            for language, text in (("en", english), ("it", italian)):
                queries.append({"qid": f"wiki-{topic.key}-then-{language}", "query": text,
                                "relevant": {page_id: 1, note_id: 1}, "category": "historical", "split": split,
                                "source": "synthetic" if language == "en" else "translation",
                                "group": f"{topic.key}-then", "intent": "historical", "canonical": [page_id],
                                "evidence": then})
    for doc_id, text in GENERAL_PAGES.items():
        corpus.append({"id": doc_id, "title": text.split("\n", 1)[0], "text": text})
    return corpus, queries


def main() -> None:
    corpus, queries = build()
    (HERE / "corpus.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in corpus),
                                       encoding="utf-8")
    (HERE / "queries.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in queries),
                                        encoding="utf-8")
    print(f"wiki: {len(corpus)} pages, {len(queries)} queries")


if __name__ == "__main__":
    main()
