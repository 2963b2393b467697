"""`python -m harness baselines [FILE ...]`: committed baselines side by side, as a Markdown table."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.gating.baseline import read_baseline
from harness.report.baselines import render_table
from harness.errors import EXIT_OK, UsageError
from harness.commands.arguments import HelpFormatter, example_epilog, exit_codes_epilog, parse_arguments, program_name



def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=program_name("baselines"),
                                     description="Print baselines side by side (default: baselines/*.json), per set.",
                                     formatter_class=HelpFormatter, epilog=example_epilog("baselines") + "\n" + exit_codes_epilog("baselines"))
    parser.add_argument("files", nargs="*", type=Path)
    args = parse_arguments(parser, argv)
    files = args.files or sorted(Path("baselines").glob("*.json"))
    if not files:
        raise UsageError("no baseline files given and none in baselines/")
    print(render_table([(path, read_baseline(path)) for path in files]), end="")
    return EXIT_OK
