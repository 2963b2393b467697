"""Build the `dedupe-hard` set: incoming Lumen issue titles against a tracker of well over 1,000 titles.

Run `python sets/dedupe-hard/build.py` from the repository root; it rewrites corpus.jsonl and
queries.jsonl here (then `python -m harness sets pin dedupe-hard` records the pins). The output
is a pure function of the word lists below and SEED: re-running it gives identical files.

Why generated: a bug's meaning here is a triple (component, symptom, condition), and each part
has three phrasings written to share no content word with each other. Two titles are duplicates
exactly when their triples are equal, so every judgment follows from the construction, and a query
can be worded so that its duplicates share few or no words with it while near-miss distractors
(two parts equal, worded as the query words them, the third part different) share most of them.
Everything is invented for Lumen, the fictional file sync and notes app of the `dedupe` set.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 32

# Each entry: one meaning, three phrasings with (as far as English allows) no shared content word.
# A title is "component symptom condition", so every component is a singular subject and every
# symptom a verb phrase agreeing with it ("Push alert drains the battery").
COMPONENTS = [
    ("Photo upload", "Picture transfer to the cloud", "Image backup"),
    ("Shared folder", "Team workspace", "Collaborative directory"),
    ("Note editor", "Writing pane", "Text composer"),
    ("Search", "Document finder", "Lookup field"),
    ("Login", "Sign-in page", "Account authentication"),
    ("Notification center", "Push alert", "Reminder banner"),
    ("Trash restore", "Deleted entry recovery", "Bin undelete button"),
    ("Version history", "Previous revisions list", "Old snapshot browser"),
    ("PDF export", "Portable document output", "Print-to-file feature"),
    ("Offline editing", "Unplugged drafting", "Disconnected access"),
    ("Desktop client", "Computer application", "PC program"),
    ("Calendar sync", "Agenda integration", "Schedule import"),
    ("Tag filter", "Label sidebar", "Keyword category picker"),
    ("Attachment preview", "Embedded media viewer", "Inline thumbnail display"),
    ("Public link", "Share URL", "Invite address"),
    ("Storage quota meter", "Space usage bar", "Capacity indicator"),
]
SYMPTOMS = [
    ("crashes", "quits unexpectedly", "closes by itself"),
    ("freezes", "hangs forever", "stops responding"),
    ("is very slow", "takes minutes", "lags badly"),
    ("shows a blank screen", "renders nothing", "appears empty"),
    ("creates duplicate entries", "makes two copies", "doubles every item"),
    ("loses recent changes", "discards my edits", "forgets unsaved work"),
    ("reports wrong numbers", "gives incorrect totals", "miscounts"),
    ("throws an error dialog", "pops up a failure message", "complains with a warning box"),
    ("drains the battery", "guzzles energy", "wastes juice"),
    ("logs me out", "ends the session", "kicks the user off"),
    ("shows garbled letters", "prints mojibake", "outputs unreadable symbols"),
    ("uses too much memory", "eats all the RAM", "bloats its footprint"),
]
CONDITIONS = [
    ("after the laptop wakes from sleep", "once the machine resumes from standby", "after hibernation"),
    ("with little charge left", "when the level drops under twenty percent", "with power saving on"),
    ("with large files", "for huge attachments", "when items exceed several gigabytes"),
    ("on mobile data", "over a cellular connection", "using 4G"),
    ("after updating the app", "since the latest release", "following an upgrade"),
    ("when renaming", "after retitling", "once something gets a new name"),
    ("with emoji characters", "if the heading contains smileys", "when pictographs are present"),
    ("behind a corporate proxy", "on the office network gateway", "through a firewall"),
    ("in dark mode", "with the night theme", "when black appearance is enabled"),
    ("with thousands of records", "for very big libraries", "once the collection grows enormous"),
    ("on a second monitor", "across dual displays", "with an external panel connected"),
    ("in a right-to-left language", "with Arabic or Hebrew script", "when the interface is set to Persian"),
]
SLOTS = (COMPONENTS, SYMPTOMS, CONDITIONS)

# Categories: how the incoming title is worded against its duplicates (docs/sets.md, "dedupe-hard").
CATEGORIES = ("reworded", "partial-overlap", "error-code", "many-duplicates")
TRIPLES_PER_CATEGORY = 200
GROUPED_PER_CATEGORY = 60  # of those triples, how many get two incoming titles (a paraphrase group)
BASE_TITLES = 600          # background tracker titles, triples never asked about
STOP = frozenset("a an the of to in on at by for with from as is are be my me me it its if when once "
                 "after over under into and or this that something every very lots".split())


def content_words(text: str) -> set[str]:
    """Lower-case words minus the stop list: the words a near-miss is judged by (the test restates this)."""
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOP}


def title(triple: tuple[int, int, int], variants: tuple[int, int, int], code: str | None = None) -> str:
    component, symptom, condition = (SLOTS[slot][triple[slot]][variants[slot]] for slot in range(3))
    text = f"{component} {symptom} {condition}"
    return f"{text} (error {code})" if code else text


def other_variant(rng: random.Random, variant: int) -> int:
    return rng.choice([v for v in range(3) if v != variant])


def build() -> tuple[list[dict], list[dict]]:
    rng = random.Random(SEED)
    every_triple = [(c, s, k) for c in range(len(COMPONENTS)) for s in range(len(SYMPTOMS)) for k in range(len(CONDITIONS))]
    rng.shuffle(every_triple)
    targets = every_triple[:TRIPLES_PER_CATEGORY * len(CATEGORIES)]
    taken = set(targets)
    # near-miss triples: two parts of a target, a third part that no target has in that combination
    rest = every_triple[len(targets):]
    titles: dict[str, tuple[int, int, int]] = {}  # text -> triple, in insertion order
    codes = iter(f"LX-{number}" for number in rng.sample(range(1000, 9999), 3000))

    def add(triple, variants, code=None) -> str | None:
        text = title(triple, variants, code)
        if text in titles:
            return None
        titles[text] = triple
        return text

    def near_miss(triple) -> tuple[int, int, int]:
        while True:
            slot = rng.randrange(3)
            changed = list(triple)
            changed[slot] = rng.choice([v for v in range(len(SLOTS[slot])) if v != triple[slot]])
            if tuple(changed) not in taken:
                return tuple(changed)

    plans = []  # (category, triple, [query variants and code], explicit distractor texts)
    for index, triple in enumerate(targets):
        category = CATEGORIES[index // TRIPLES_PER_CATEGORY]
        grouped = index % TRIPLES_PER_CATEGORY < GROUPED_PER_CATEGORY
        first = tuple(rng.randrange(3) for _ in range(3))
        # a paraphrase of the incoming title rewords one part of it (the component: all an error-code title has)
        reworded_part = 0 if category == "error-code" else rng.randrange(3)
        asks = [first] + ([tuple(other_variant(rng, v) if slot == reworded_part else v
                                 for slot, v in enumerate(first))] if grouped else [])
        code = next(codes) if category == "error-code" else None
        if category == "reworded":      # the duplicate words no part as any incoming title does
            duplicates = [tuple(next(v for v in range(3) if all(v != a[slot] for a in asks)) for slot in range(3))]
        elif category == "partial-overlap":  # two parts worded alike, one reworded
            changed = rng.randrange(3)
            duplicates = [tuple(other_variant(rng, v) if slot == changed else v for slot, v in enumerate(first))]
        elif category == "error-code":  # every part reworded, the error code shared
            duplicates = [tuple(other_variant(rng, v) for v in first)]
        else:                           # three duplicates, each worded its own way
            duplicates = [tuple((v + shift) % 3 for v in first) for shift in (1, 2)]
            duplicates.append(tuple(other_variant(rng, v) if slot != 0 else v for slot, v in enumerate(first)))
        for variants in duplicates:
            add(triple, variants, code)
        distractors = []  # per incoming title
        for ask in asks:
            built = []
            for _ in range(2):  # worded as the incoming title, one part different: shares words, not meaning
                text = add(near_miss(triple), ask, next(codes) if code else None)
                if text:
                    built.append(text)
            distractors.append(built)
        plans.append((category, triple, asks, code, distractors, grouped))

    for triple in rest[:BASE_TITLES]:
        add(triple, tuple(rng.randrange(3) for _ in range(3)), next(codes) if rng.random() < 0.15 else None)

    order = list(titles)
    rng.shuffle(order)
    ids = {text: f"issue-{number:04d}" for number, text in enumerate(order, start=1)}
    corpus = [{"id": ids[text], "text": text} for text in order]

    title_words = {text: content_words(text) for text in titles}
    queries = []
    for number, (category, triple, asks, code, distractors, grouped) in enumerate(plans):
        split = "development" if number % 2 == 0 else "held-out"
        for ask_number, ask in enumerate(asks):
            # an error-code report names the component and the code only (what a crash dialog shows)
            query = f"{SLOTS[0][triple[0]][ask[0]]} error {code}" if code else title(triple, ask)
            words = content_words(query)
            relevant = {ids[text]: 1 for text, t in titles.items() if t == triple}
            near = {ids[text] for built in distractors for text in built}  # a paraphrase's are judged too
            # lexical near-misses: a non-duplicate holding at least half of the query's words is judged too
            near |= {ids[text] for text, t in titles.items()
                     if t != triple and len(words & title_words[text]) * 2 >= len(words)}
            judged = dict(sorted({**{doc: 0 for doc in near}, **relevant}.items()))
            row = {"qid": f"dedupe-hard-{len(queries) + 1:03d}", "query": query, "relevant": judged,
                   "category": category, "split": split, "source": "synthetic" if ask_number == 0 else "paraphrase"}
            if grouped:
                row["group"] = f"dedupe-hard-bug-{number + 1:03d}"
            row["notes"] = "near-miss distractors: " + " ".join(sorted(ids[text] for text in distractors[ask_number]))
            queries.append(row)
    return corpus, queries


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    corpus, queries = build()
    write_jsonl(HERE / "corpus.jsonl", corpus)
    write_jsonl(HERE / "queries.jsonl", queries)
    print(f"{len(corpus)} tracker titles, {len(queries)} incoming titles")


if __name__ == "__main__":
    main()
