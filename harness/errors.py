"""The harness's exception tree; each error knows the exit code the CLI turns it into."""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_CONFIG = 2
EXIT_BACKEND = 3
# A bug of ours (sysexits.h EX_SOFTWARE): an unexpected exception, never 0-3 so CI cannot mistake it
# for a verdict or a config error (harness.commands.crash_guard).
EXIT_INTERNAL = 70


class HarnessError(Exception):
    """Base of every error the harness reports to the user as one line."""

    exit_code = EXIT_CONFIG


class UsageError(HarnessError):
    """Bad command-line usage or configuration (budgets file, option values)."""


class CacheFolderError(UsageError, OSError):
    """The user cache folder cannot be created or written (exit 2, the environment's); an OSError too, so an
    adapter that can run without the cache goes on without it."""


class SetError(HarnessError):
    """A query set or its corpus is malformed, inconsistent or has drifted."""


class BaselineError(HarnessError):
    """A baseline file is missing, corrupt, of the wrong format or not comparable."""


class GatesFailed(HarnessError):
    """A run's verdict was not a pass (`raise_for_gates`): its message is the verdict's few lines, its exit
    code the run's (1 a gate failed, 3 the backend failed, 128+n interrupted)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class ProtocolError(HarnessError):
    """A line from the adapter breaks wire protocol v1."""

    exit_code = EXIT_BACKEND


class AdapterError(HarnessError):
    """The backend process failed: crash, timeout, protocol error or an `error` reply.

    Carries what a user needs to debug it: the argv, the query being asked, and the tail
    of the adapter's stderr log.
    """

    exit_code = EXIT_BACKEND

    def __init__(self, message: str, *, argv: list[str] | None = None, qid: str | None = None,
                 stderr_tail: str = "") -> None:
        super().__init__(message)
        self.argv = list(argv or [])
        self.qid = qid
        self.stderr_tail = stderr_tail


class Interrupted(HarnessError):
    """The run was stopped by SIGINT or SIGTERM; exit 128 + signal number, as shells report it."""

    def __init__(self, signum: int) -> None:
        import signal
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.exit_code = 128 + signum
