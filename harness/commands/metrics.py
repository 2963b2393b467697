"""`python -m harness metrics`: every measure family, its spellings, cutoff rule and definition, read from the registry."""

from __future__ import annotations

from harness.errors import EXIT_OK
from harness.commands.arguments import command_parser, parse_arguments
from harness.scoring.metrics import family_table

COLUMNS = ("family", "ours", "ir_measures", "trec_eval", "cutoff", "options")  # each row's keys, and their titles

NOTES = """\
Names: FAMILY@K in any spelling above, case-insensitive; trec_eval names as FAMILY_K or FAMILY.K.
Options, ours or ir_measures': (condensed) = (judged_only=True): unjudged documents removed from the
ranking before measuring (Sakai's condensed lists, trec_eval -J); (rel=N): relevant means grade >= N
(trec_eval -l N, default 1). Ours: ndcg@10(condensed), ap@100(condensed,rel=2); ir_measures:
nDCG(judged_only=True)@10, AP(rel=2)@100.
Grades: >= 1 relevant, 0 judged non-relevant, negative or absent unjudged. FAMILY@K is FAMILY on the
ranking cut at K (trec_eval -M K); a family with no cutoff reads the whole ranking the backend returned.
mrr with no cutoff is RR@10 (the reports' MRR@10); RR and recip_rank are full depth."""


def render() -> str:
    """The table of families, then one definition per family, then the naming notes."""
    rows = family_table()
    widths = {key: max(len(key), *(len(row[key]) for row in rows)) for key in COLUMNS}
    lines = ["  ".join(key.ljust(widths[key]) for key in COLUMNS).rstrip()]
    lines.append("  ".join("-" * widths[key] for key in COLUMNS))
    lines += ["  ".join(row[key].ljust(widths[key]) for key in COLUMNS).rstrip() for row in rows]
    lines += ["", "Definitions:"]
    lines += [f"  {row['family']:<{widths['family']}}  {row['definition']}" for row in rows]
    lines += ["", NOTES, "", "Examples (each one parses):"]
    lines += [f"  {row['family']:<{widths['family']}}  {row['examples'].replace(', ', ' ')}" for row in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parse_arguments(command_parser("metrics", "List every measure family: its spellings (ours, ir_measures, "
                                              "trec_eval), cutoff rule, options and definition."), argv)
    print(render(), end="")
    return EXIT_OK
