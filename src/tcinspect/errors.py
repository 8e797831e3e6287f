"""The exception tree and the exit-code contract: every exception tcinspect raises past its own module.

::

    BaseException
    ├── Interrupted               SIGINT or SIGTERM arrived (exit 130 or 143; no output file is written)
    └── Exception
        ├── TcinspectError        the tool's own errors: one line, the cause and the fix; ``exit_code`` (2
        │   │                     unless a subclass says otherwise), caught once by the CLI
        │   ├── UsageError        a bad option or combination of options
        │   │   ├── DynamoConfigError a torch._dynamo.config setting this torch does not have or take
        │   │   ├── OutputPathError   an output path tcinspect will not write
        │   │   │   └── OutputWriteError  a write that failed (also the OSError it was)
        │   │   └── GraphvizError     Graphviz's ``dot`` is missing or could not lay a graph out
        │   │       └── GraphvizTimeout   ``dot`` did not finish in time (the caller lays the graph out itself)
        │   ├── ModelFileError    the model file cannot be loaded or breaks the model-file contract
        │   ├── ModelRaisedError  the user's model (or script) raised
        │   ├── ReportFormatError a saved report is unreadable, foreign, truncated or of another schema
        │   ├── TraceLogError     a TORCH_TRACE log that cannot be read (or, with --strict, was not understood)
        │   ├── DeviceError       the requested device is not available
        │   └── ReportFailedError the report shown records a failure: exit code of its kind (exit_code_for)
        ├── UserTargetError       inside a capture: a --backend or --pass target misbehaved (the report's
        │                         failure becomes ``user_target``)
        ├── ModelExited           inside a capture: the model called sys.exit()
        ├── ChildInternalError    a bug in tcinspect inside the capture process (the CLI's internal error, 70)
        ├── Mismatch              inside serialize: the fast report builder met a value it does not take (the
        │                         checked builder then names the bad key)
        └── NotOurs               inside serialize: YAML the report emitter does not write (read it with PyYAML)

Exceptions that never leave their module (a parser's private signal to itself) stay in it.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes: a contract, documented in the README, docs/errors.md and ``--help``."""

    OK = 0
    #: A check failed (thresholds or baseline); used by gating commands.
    CHECK_FAILED = 1
    #: Bad input: usage, model file, inputs, saved report, a model that raises.
    USAGE_ERROR = 2
    #: The capture ran but a compiler stage failed; the report holds what worked.
    STAGE_FAILED = 3
    #: The capture process crashed (e.g. a segfault) or ran past --timeout; stages recorded before are shown.
    CAPTURE_CRASHED = 4
    #: Interrupted by SIGINT (Ctrl-C): 128 + 2, as shells report it; no output file was written.
    INTERRUPTED = 130
    #: Stopped by SIGTERM: 128 + 15; no output file was written.
    TERMINATED = 143
    #: A bug in tcinspect itself (an unexpected exception, shown with its traceback).
    INTERNAL_ERROR = 70


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived (tcinspect.interrupts): a BaseException, so no ``except Exception`` in
    torch or in the model swallows it, and Click does not turn it into "Aborted!" as it does KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class TcinspectError(Exception):
    """Base of the tool's own errors: one line naming the cause, and the fix."""

    exit_code = ExitCode.USAGE_ERROR

    def __init__(self, cause: str, fix: str = "") -> None:
        super().__init__(cause)
        self.cause = cause
        self.fix = fix

    def one_line(self) -> str:
        return f"{self.cause} — {self.fix}" if self.fix else self.cause


class UsageError(TcinspectError):
    """A bad option or combination of options."""


class ModelFileError(TcinspectError):
    """The model file cannot be loaded or does not follow the model-file contract."""


class ModelRaisedError(TcinspectError):
    """The user's model (or script) raised while running."""


class ReportFormatError(TcinspectError):
    """A saved report is unreadable, foreign, truncated or of another schema version."""


class TraceLogError(TcinspectError):
    """A TORCH_TRACE log or directory that cannot be read, or (``--strict``) was not fully understood."""


class DeviceError(TcinspectError):
    """The requested device is not available (e.g. --device cuda without a GPU)."""


#: The exit code of a report's typed failure (Report.failure.kind; see report.FAILURE_KINDS).
FAILURE_EXIT_CODES = {
    "stage": ExitCode.STAGE_FAILED,
    "user_target": ExitCode.USAGE_ERROR,  # the user's own --backend or --pass: their input, like a model that raises
    "crashed": ExitCode.CAPTURE_CRASHED,
    "rank_error": ExitCode.USAGE_ERROR,  # a rank's own bad input or model error
}


def exit_code_for(kind: str) -> ExitCode:
    """The exit code of a failure kind; an unknown kind (a report from a newer tcinspect) is a failed stage."""
    return FAILURE_EXIT_CODES.get(kind, ExitCode.STAGE_FAILED)


class ReportFailedError(TcinspectError):
    """The report a command showed records a failure: its one line, and the exit code of its kind."""

    def __init__(self, kind: str, cause: str, fix: str = "") -> None:
        super().__init__(cause, fix)
        self.kind = kind
        self.exit_code = exit_code_for(kind)


class DynamoConfigError(UsageError):
    """A torch._dynamo.config setting (``name=value``) this torch does not have, or a value it does not take."""


class GraphvizError(UsageError):
    """Graphviz's ``dot`` is missing or could not lay a graph out."""


class GraphvizTimeout(GraphvizError):
    """``dot`` did not finish in time: the caller lays the graph out itself (``layered``)."""


class OutputPathError(UsageError):
    """An output path tcinspect will not write (a directory, a socket, a block device)."""


class UserTargetError(Exception):
    """A --backend or --pass target misbehaved (returned the wrong thing, broke the graph)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


class ModelExited(Exception):
    """The model called sys.exit() while running: its own error, not a reason to stop tcinspect."""


class ChildInternalError(Exception):
    """A bug in tcinspect inside the capture process: its traceback, shown by the CLI as an internal error."""


class Mismatch(Exception):
    """The fast builder met a value it does not take; ``serialize.build.build`` then names the bad key."""


class NotOurs(Exception):
    """The text uses YAML the emitter does not write: read it with a full YAML parser."""


class OutputWriteError(OutputPathError, OSError):
    """A write that failed (a read-only directory, a full disk): a usage error (exit 2) naming the path and the
    option to change, and still the OSError it was (errno, strerror) for a caller that tolerates one."""

    def __init__(self, cause: str, fix: str, original: OSError) -> None:
        UsageError.__init__(self, cause, fix)
        self.original = original
        self.errno, self.strerror, self.filename = original.errno, original.strerror, original.filename

    def __str__(self) -> str:
        return str(self.original)  # what a caller that words its own message (`exc.strerror or exc`) shows
