"""`python -m harness metrics`: the metric names the harness accepts, ours and ir_measures spellings."""

from __future__ import annotations

import argparse

from harness.errors import EXIT_OK
from harness.commands.arguments import parse_arguments, program_name
from harness.scoring.metrics import metric_names


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=program_name("metrics"),
                                     description="List the metric names accepted (ours and ir_measures spellings).")
    parse_arguments(parser, argv)
    for name in metric_names():
        print(name)
    return EXIT_OK
