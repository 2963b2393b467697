"""What every command shares when reading its argv: argparse without exits, the split at `--`, the
program name the user typed, and "did you mean" for a mistyped option."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError, UsageError

if TYPE_CHECKING:
    from harness.layout import Layout

DEFAULT_PROGRAM = "retrieval-gate"
# Subcommand -> its module (harness.commands.cli dispatches argv to them); anything else is the run command.
SUBCOMMANDS = {
    "sets": "harness.commands.sets",
    "metrics": "harness.commands.metrics",
    "check-adapter": "harness.commands.check_adapter",
    "compare": "harness.commands.compare",
    "export": "harness.commands.export",
    "baselines": "harness.commands.baselines",
    "merge": "harness.commands.merge",
    "init": "harness.commands.init",
    "history": "harness.commands.history",
    "bisect": "harness.commands.bisect",
    "calibrate": "harness.commands.calibrate",
}


class ArgumentsExit(HarnessError):
    """argparse has already printed its message (or --help): only its exit status is left to return."""

    def __init__(self, code: int) -> None:
        super().__init__("")
        self.exit_code = code


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, with argparse's exit turned into an ArgumentsExit (main() returns, never exits)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exit_:
        raise ArgumentsExit(int(exit_.code or 0)) from None


def split_adapter_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the options, the adapter command after the first `--`); the command is empty without `--`."""
    if "--" not in argv:
        return list(argv), []
    cut = argv.index("--")
    return list(argv[:cut]), list(argv[cut + 1:])


def parse_with_adapter(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """(the options parsed, the adapter command after `--`), which comes with --adapter and only with it."""
    options, adapter_argv = split_adapter_command(argv)
    args = parse_arguments(parser, options)
    if args.adapter and not adapter_argv:
        raise UsageError("--adapter: write the adapter command after '--', e.g. --adapter -- ./my-adapter --flag")
    if adapter_argv and not args.adapter:
        raise UsageError("a command after '--' needs --adapter")
    return args, adapter_argv


def metric_names(names: Iterable[str], spelling: Callable[[str], str]) -> list[str]:
    """--metric's names as `spelling` writes them, each once; a name it refuses (ValueError) is one usage line."""
    try:
        return list(dict.fromkeys(map(spelling, names)))
    except ValueError as exc:
        raise UsageError(f"--metric: {exc}") from None


def program_name(subcommand: str | None = None) -> str:
    """What the user typed to start us: `python -m harness` or `retrieval-gate` (the console script),
    then the subcommand; `retrieval-gate` when called as a library (tests, embedding)."""
    launched = sys.argv[0] if sys.argv else ""
    path = os.path.normpath(launched)
    if os.path.basename(path) == "__main__.py" and os.path.basename(os.path.dirname(path)) == "harness":
        name = "python -m harness"
    elif os.path.basename(path).startswith(DEFAULT_PROGRAM):
        name = os.path.basename(path)
    else:
        name = DEFAULT_PROGRAM
    return f"{name} {subcommand}" if subcommand else name


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with "did you mean --baseline?" for an unknown option (or `sets` for a mistyped
    subcommand among `commands`), and the `--` hint when an option in `command_after` (e.g.
    `--adapter`) is followed by a command without `--` first."""

    def __init__(self, *args, command_after: tuple[str, ...] = (), commands: tuple[str, ...] = (),
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command_after = command_after
        self.commands = commands
        self._argv: list[str] = []

    def parse_known_args(self, args=None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        hint = self.hint_for(message)
        super().error(message + (f"\n{hint}" if hint else ""))

    def hint_for(self, message: str) -> str:
        """The hint for argparse's `unrecognized arguments: ...` message, or ""."""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        unknown = message[len(prefix):].split()
        for option in self.command_after:
            if option in self._argv and "--" not in self._argv:
                command = " ".join(unknown)
                return (f"hint: put '--' between {option} and the adapter command: "
                        f"{option} -- {command}")
        if unknown and self._argv and unknown[0] == self._argv[0] and not unknown[0].startswith("-"):
            close = difflib.get_close_matches(unknown[0], self.commands, n=1, cutoff=0.6)
            if close:
                return f"hint: {unknown[0]}: did you mean the subcommand {close[0]}?"
        options = [option for action in self._actions for option in action.option_strings if option.startswith("--")]
        for word in unknown:
            if word.startswith("--"):
                name = word.split("=", 1)[0]
                close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
                if close:
                    return f"hint: {name}: did you mean {close[0]}?"
        return ""


# -- exit codes: the one home of what each command's codes mean (--help epilogs, docs, tests) -------

SIGNALS = "a signal: 130 SIGINT, 143 SIGTERM, 129 SIGHUP"
PIPE = "141 when the reader of stdout quits early (head -1), as for SIGPIPE"
INTERNAL = "internal error (a bug): one line, the traceback in .retrieval-gate/{command}.traceback.txt"


def _ending(command: str, signals: str = f"{SIGNALS}; {PIPE}") -> dict[str, str]:
    """The last rows of a subcommand's codes: a bug (70, its traceback file named), then a signal."""
    return {"70": INTERNAL.format(command=command), "128+n": signals}


EXIT_CODES: dict[str, dict[str, str]] = {
    "run": {
        "0": "every gate passed (or --no-gate / --update-baseline / --shard: measured, nothing failed)",
        "1": "a gate failed (each failure one line)",
        "2": "usage, configuration, set, budgets, policy, baseline or output error (stdout included)",
        "3": "the backend failed (crash, timeout, protocol error); partial report written",
        "70": "internal error (a bug): one line, the traceback in <--out stem>.traceback.txt "
              "(.retrieval-gate/report.traceback.txt when --out is a stream), partial report written",
        "128+n": f"{SIGNALS}: adapter stopped, partial report written (a closed stdout keeps the run's code)",
    },
    "sets": {
        "0": "listed, shown, verified, pinned or imported",
        "2": "usage error, or a set, corpus, pin or BEIR folder problem (verify: any problem)",
        **_ending("sets", f"{SIGNALS}: pip and temp folders cleaned up; {PIPE}"),
    },
    "metrics": {
        "0": "the table was printed",
        "2": "usage error",
        **_ending("metrics"),
    },
    "check-adapter": {
        "0": "no check failed",
        "1": "at least one check failed",
        "2": "usage error, or a --set / --corpus-dir problem",
        **_ending("check-adapter", f"{SIGNALS}: adapter stopped, temp corpus removed; {PIPE}"),
    },
    "compare": {
        "0": "compared (whatever the deltas)",
        "2": "usage error, a report or baseline that cannot be read, or runs not comparable",
        **_ending("compare"),
    },
    "export": {
        "0": "the TREC files were written",
        "2": "usage error, a report that cannot be read or is incomplete, or a set that cannot be found",
        **_ending("export"),
    },
    "baselines": {
        "0": "the table (or with diff, what moved) was printed",
        "2": "usage error, or a baseline that cannot be read",
        **_ending("baselines"),
    },
    "merge": {
        "0": "every gate passed (or --no-gate / --update-baseline)",
        "1": "a gate failed",
        "2": "usage error, or shard reports missing, repeated, incomplete or mismatched, or a baseline error",
        **_ending("merge", f"{SIGNALS} (a closed stdout keeps the merge's code)"),
    },
    "history": {
        "0": "shown, imported, or (drift) no figure drifted over its limit, or one did without --fail",
        "1": "history drift --fail: a figure drifted over its limit",
        "2": "usage error, or a history store, report or baseline that cannot be read (a store is never rewritten)",
        **_ending("history"),
    },
    "bisect": {
        "0": "answered: the first bad commit, the range it is in, or no change detectable",
        "2": "usage error, GOOD or BAD not commits (GOOD not an ancestor of BAD), or a set problem",
        "3": "the backend failed at GOOD or at BAD (a commit between where it fails is skipped)",
        **_ending("bisect", f"{SIGNALS}: adapter stopped, worktree and temp folders removed; {PIPE}"),
    },
    "calibrate": {
        "0": "every run completed and each set's calibration was written into the baseline",
        "2": "usage error, or a set, baseline or adapter-command problem (nothing written)",
        "3": "the backend failed in a run (nothing written)",
        **_ending("calibrate", f"{SIGNALS}: adapter stopped, nothing written"),
    },
    "init": {
        "0": "every starter file was written or, existing, kept",
        "2": "usage error, or a folder that cannot be written",
        **_ending("init"),
    },
}


def exit_codes_epilog(command: str) -> str:
    """The `exit codes:` block of a command's --help, from EXIT_CODES (no `%`: argparse formats epilogs)."""
    rows = EXIT_CODES[command]
    width = max(len(code) for code in rows)
    return "exit codes:\n" + "\n".join(f"  {code:<{width}}  {meaning}" for code, meaning in rows.items()) + "\n"


# -- worked examples: the one home of each command's example (--help epilogs, docs, tests) --------
# Run from a clone, in this order, each works: the run writes memory.json, which export reads;
# the two shards are what merge combines.

WORKED_EXAMPLES: dict[str, tuple[str, str]] = {
    "run": ("python -m harness --set memory --out memory.json --summary memory.md",
            "BM25 over the memory set, gated against baselines/current.json: the verdict and one line per "
            "failed gate on the terminal, the JSON report in memory.json, a Markdown summary in memory.md"),
    "sets list": ("python -m harness sets list",
                  "one line per set, the team's (sets/) then the shipped ones: name, revision, queries, corpus "
                  "source, where it comes from (a shipped set a team's set shadows says so), description"),
    "sets show": ("python -m harness sets show dedupe",
                  "queries per category, split and source, contract counts, and how many judged queries "
                  "share no content word with a relevant document"),
    "sets verify": ("python -m harness sets verify memory",
                    "fetches the corpus if needed and checks its hash, every pin and every judged id; exit 2 on "
                    "any problem"),
    "sets pin": ("python -m harness sets pin memory",
                 "after an intended corpus edit: records the content hash of every document the queries name "
                 "in sets/memory/set.json (atomically)"),
    "sets import-beir": ("python -m harness sets import-beir ~/beir/scifact --name scifact --split test",
                         "turns a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv) into the set "
                         "sets/scifact, never overwriting one"),
    "sets export-corpus": ("python -m harness sets export-corpus memory corpus/",
                           "writes corpus/memory.jsonl exactly as an adapter reads it, for a backend that "
                           "indexes outside the harness"),
    "metrics": ("python -m harness metrics",
                "every measure family: its spellings (ours, ir_measures, trec_eval), cutoff rule, options "
                "and definition"),
    "check-adapter": ("python -m harness check-adapter --set memory -- python -m adapters.bm25",
                      "the conformance suite against a live adapter on the memory set's corpus and queries: "
                      "one pass/fail line per check"),
    "compare": ("python -m harness compare baselines/current.json baselines/onnx.json baselines/hybrid.json "
                "--summary compare.md",
                "each candidate against the base, paired per query: the verdict, the Holm headline, "
                "'no worse than -2.0 points', movement, latency CIs; Markdown in compare.md"),
    "export": ("python -m harness export memory.json --trec-run memory.run --trec-qrels memory.qrels",
               "the run's rankings and the set's judgments in trec_eval's formats; score them with "
               "`trec_eval -c -M 10 memory.qrels memory.run`, or back here with --run-file"),
    "baselines": ("python -m harness baselines",
                  "the committed baselines (baselines/*.json) side by side per set, in Markdown"),
    "merge": ("python -m harness merge shard-1.json shard-2.json --out merged.json",
              "combines the reports of `--shard 1/2 --out shard-1.json` and `--shard 2/2 --out shard-2.json` "
              "into the report the unsharded run writes, then gates it"),
    "history": ("python -m harness history import memory.json --history history.sqlite",
                "appends the run report memory.json to the history store history.sqlite (created when missing); "
                "`history --history history.sqlite --html history.html` then shows each series with its change "
                "points, `history drift` the drift of the accepted baselines"),
    "bisect": ("python -m harness bisect HEAD~1 HEAD --set memory -- python -m adapters.bm25",
               "measures the memory set at both commits, each in a git worktree of its own with the adapter started "
               "there; here BM25 did not move, so it answers that no change is detectable and how large a change "
               "the set could detect"),
    "calibrate": ("python -m harness calibrate --set memory --runs 3",
                  "runs BM25 over the memory set three times and records in baselines/current.json how much each "
                  "gated figure moved between runs: BM25 is deterministic, so its quality calibrates to zero noise "
                  "and its gates are unchanged; the latency p50/p95 spread is recorded beside it"),
    "init": ("python -m harness init my-team",
             "a team's starter layout in my-team/: retrieval-gate.toml, an example set, baselines/, budgets.json, "
             "gate-policy.json, the CI jobs and .retrieval-gate/.gitignore; a file that exists is kept, never "
             "overwritten"),
}


def example_line(line: str) -> str:
    """A WORKED_EXAMPLES line with `python -m harness` spelled as `program_name()` (the console script's name)."""
    return line.replace("python -m harness", program_name(), 1)


def example_epilog(command: str) -> str:
    """The `example:` block of a command's --help, from WORKED_EXAMPLES, in the spelling the user started us with."""
    line, what = WORKED_EXAMPLES[command]
    return f"example:\n  {example_line(line)}\n" + textwrap.fill(what, 96, initial_indent="    ", subsequent_indent="    ") + "\n"


def command_parser(command: str, description: str, *blocks: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand's parser: named as the user started us (unless `prog` is given), its epilog the worked
    example, then `blocks`, then the exit codes, kept as written."""
    kwargs.setdefault("prog", program_name(command))
    return argparse.ArgumentParser(description=description, formatter_class=HelpFormatter, **kwargs,
                                   epilog="\n".join([example_epilog(command), *blocks, exit_codes_epilog(command)]))


class HelpFormatter(argparse.HelpFormatter):
    """argparse's wrapping for one-paragraph descriptions; a text holding line breaks (an epilog's
    examples or exit codes) is kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def add_timeout_options(group, *, answer_help: str = "seconds to wait for each answer") -> None:
    """--timeout, --startup-timeout and --startup-limit, worded once for every command that starts an adapter."""
    from harness.adapter.startup import QUERY_TIMEOUT_SECONDS, STARTUP_LIMIT_SECONDS, STARTUP_TIMEOUT_SECONDS

    group.add_argument("--timeout", type=float, default=QUERY_TIMEOUT_SECONDS, metavar="S",
                       help=f"{answer_help} (default: {QUERY_TIMEOUT_SECONDS:g})")
    group.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_SECONDS, metavar="S",
                       help=f"longest silence allowed before the ready banner or first answer; each progress "
                            f"line the adapter prints restarts it (default: {STARTUP_TIMEOUT_SECONDS:g})")
    group.add_argument("--startup-limit", type=float, default=STARTUP_LIMIT_SECONDS, metavar="S",
                       help=f"longest start-up allowed however much progress the adapter reports "
                            f"(default: {STARTUP_LIMIT_SECONDS:g})")


def add_gating_options(parser: argparse.ArgumentParser, title: str = "gating") -> None:
    """The options that decide a verdict, worded once for the run and `merge` (they gate alike)."""
    from harness.gating.baseline import DEFAULT_BASELINE_PATH
    from harness.gating.budgets import DEFAULT_BUDGETS_PATH
    from harness.gating.policy import DEFAULT_POLICY_FILE

    gate = parser.add_argument_group(title)
    gate.add_argument("--baseline", type=Path, default=None,
                      help=f"baseline to gate against (default: the config's `baseline`, else {DEFAULT_BASELINE_PATH} "
                           f"of the team's folder, else the shipped one when the team has no sets)")
    gate.add_argument("--budgets", type=Path, default=None,
                      help=f"latency and resource budgets file (default: the config's `budgets`, else {DEFAULT_BUDGETS_PATH} "
                           f"when present, else 300 ms p95)")
    gate.add_argument("--policy", type=Path, default=None,
                      help=f"gate policy file: gated metrics, drop limit, category and significance rules "
                           f"(default: the config's `policy`, else {DEFAULT_POLICY_FILE} when present, else "
                           f"recall@10 may drop 2.0 points)")
    gate.add_argument("--allow-backend-change", action="store_true",
                      help="gate against a baseline recorded for another backend or model (the report records it)")
    gate.add_argument("--update-baseline", action="store_true",
                      help="write these numbers to --baseline (atomically; complete runs only)")
    gate.add_argument("--yes", action="store_true",
                      help="with --update-baseline: write without asking (asked only when stdin is a terminal)")
    gate.add_argument("--known-contract-failures", action="store_true",
                      help="contracts the baseline already records as broken (same query) are reported, not "
                           "failed; only new breaks fail (for backends with known, tracked limitations)")
    gate.add_argument("--no-gate", action="store_true", help="measure and report only; exit 0 unless the backend fails")


SETS_DIR_HELP = "the team's sets folder (default: the config's `sets`, else sets/); a name not there is looked up " \
                "among the shipped sets"


def add_source_options(group, *, run_file: bool = False) -> None:
    """What to run: the sets and who answers them (a built-in backend, the team's adapter after `--`, or with
    `run_file` a TREC run), worded once for the run and `calibrate`."""
    from harness.adapter.backends import BACKENDS, DEFAULT_BACKEND

    group.add_argument("--set", dest="sets", action="append", metavar="NAME", default=[],
                       help="set name under --sets-dir, a set folder, or 'all' (repeatable)")
    group.add_argument("--sets-dir", type=Path, default=None, help=SETS_DIR_HELP)
    group.add_argument("--backend", choices=sorted(BACKENDS), default=None,
                       help=f"a built-in reference adapter (default: the config's `backend`, else {DEFAULT_BACKEND})")
    group.add_argument("--adapter", action="store_true",
                       help="run your own adapter: its command follows after '--' (argv, never a shell)")
    if run_file:
        group.add_argument("--run-file", type=Path, default=None, metavar="RUN",
                           help="evaluate a precomputed TREC run file instead of asking an adapter (latency gates "
                                "skipped)")
    group.add_argument("--expect-banner", action="store_true",
                       help="fail unless the adapter prints its ready banner first (built-in backends always do)")
    group.add_argument("--k", type=int, default=None, help="ids to ask for per query (default: each set's k)")
    group.add_argument("--offline", action="store_true", help="never fetch corpus archives; fail if not cached")


def configured_source(args: argparse.Namespace, team: Layout, adapter_argv: Sequence[str]) -> list[str]:
    """When the command named no source of rankings (no --backend, --adapter or --run-file): the config's
    backend, or its adapter with its expect_banner, set on `args` as a gate run takes them (`adapter_folder`: the
    config's folder, where its adapter starts; None: the working folder). Returns the adapter command to run."""
    args.adapter_folder = None
    if args.backend is not None or args.adapter or getattr(args, "run_file", None) is not None:
        return list(adapter_argv)
    args.backend = team.rerun.backend
    if not team.rerun.adapter:
        return list(adapter_argv)
    args.adapter, args.adapter_folder = True, team.folder
    args.expect_banner = args.expect_banner or team.rerun.expect_banner
    return list(team.rerun.adapter)


def resolve_layout(args: argparse.Namespace, adapter_argv: Sequence[str] = ()) -> Layout:
    """The team's layout (harness/layout.py) from the options given (and the adapter's argv after `--`); the
    path options (`sets_dir`, `baseline`, `budgets`, `policy`, `history`, those the command has) are set to what
    it resolved."""
    from harness.layout import FROM_LAYOUT, resolve
    from harness.rerun import Rerun

    given = vars(args)
    asking = Rerun(backend=given.get("backend"), adapter=tuple(adapter_argv) if given.get("adapter") else (),
                   expect_banner=bool(given.get("expect_banner")),
                   run_file=None if given.get("run_file") is None else str(given["run_file"]))
    team = resolve(sets_dir=given.get("sets_dir"), budgets=given.get("budgets"), policy=given.get("policy"),
                   baseline=FROM_LAYOUT if given.get("baseline") is None else given["baseline"],
                   asking=asking, for_update=bool(given.get("update_baseline")))
    for name in ("sets_dir", "baseline", "budgets", "policy"):
        if name in given:
            setattr(args, name, getattr(team, name))
    if "history" in given and given["history"] is None:  # the option, else the config's key
        args.history = team.history
    return team
