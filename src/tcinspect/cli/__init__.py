"""The command-line interface: one small module per command, one error boundary here.

Importing this package must not import torch (``--help`` stays fast); commands import the
capture engine only when they compile.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, Optional

from tcinspect import collector, interrupts
from tcinspect.capturing import prewarm
from tcinspect.cli._app import app  # the commands below register on it
from tcinspect.errors import ExitCode, Interrupted, TcinspectError

# the import order is the order `tcinspect --help` lists the commands in
# isort: off
from tcinspect.cli import trace as _trace  # noqa: F401  (registers the command)
from tcinspect.cli import breaks as _breaks  # noqa: F401
from tcinspect.cli import codegen as _codegen  # noqa: F401
from tcinspect.cli import check as _check  # noqa: F401
from tcinspect.cli import diff as _diff  # noqa: F401
from tcinspect.cli import guards as _guards  # noqa: F401
from tcinspect.cli import verify as _verify  # noqa: F401
from tcinspect.cli import export as _export  # noqa: F401
from tcinspect.cli import compile_time as _compile_time  # noqa: F401
from tcinspect.cli import shapes as _shapes  # noqa: F401
from tcinspect.cli import memory as _memory  # noqa: F401
from tcinspect.cli import schema as _schema  # noqa: F401
from tcinspect.cli import mcp as _mcp  # noqa: F401
# isort: on


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; every error ends here as one line on stderr and a documented exit code."""
    from tcinspect.cli import common

    args = list(sys.argv[1:] if argv is None else argv)
    common.DEBUG.clear()  # a command's --debug sets it once its options are parsed
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("tcinspect: warning: %(message)s"))
    logging.getLogger("tcinspect").addHandler(handler)
    try:
        with interrupts.handled():
            try:
                # standalone mode: Typer prints its own usage errors (exit 2) and ends with SystemExit
                _command()(args=args, prog_name="tcinspect", standalone_mode=True)
                code = int(ExitCode.OK)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            interrupts.check()  # a signal torch swallowed: the run did not end as it should
            return code
    except TcinspectError as exc:
        if common.DEBUG:
            traceback.print_exc()
        _say(f"tcinspect: error: {exc.one_line()}")
        return int(exc.exit_code)
    except Interrupted as exc:
        if common.DEBUG:
            traceback.print_exc()
        _say(interrupts.line(exc.signum))
        return interrupts.exit_code(exc.signum)
    except Exception:  # noqa: BLE001 - a bug in tcinspect: show it, never hide it
        traceback.print_exc()
        _say("tcinspect: internal error (the traceback above is a bug in tcinspect; please report it)")
        return int(ExitCode.INTERNAL_ERROR)
    finally:
        logging.getLogger("tcinspect").removeHandler(handler)


_built: list[Any] = []


def _command() -> Any:
    """The command line as click runs it, built from the Typer app once per process (about 30 ms a time: a
    process that runs several commands, such as the tests, builds it once)."""
    if not _built:
        import typer.main

        _built.append(typer.main.get_command(app))
    return _built[0]


def _say(line: str) -> None:
    """One unwrapped line on stderr (Rich would wrap it at the terminal's width)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run() -> None:
    try:
        code = main()
    finally:
        prewarm.discard()  # a capture's child started ahead that no capture took (a saved report reused, --help)
    if "torch" not in sys.modules:
        # a read of a saved report: freeing a 15 MB report's million objects one by one at exit took
        # 0.05-0.2 s, for nothing. Not after a capture, whose torch workers atexit must stop.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a reader that went away (`| head`): nothing left to tell it
            pass
        logging.shutdown()
        os._exit(code)
    collector.finish_before_exit()  # after a capture in this process (--debug): its exit, less the collector's walk
    sys.exit(code)
