"""Every file tcinspect writes for the user goes through ``write``: it never replaces what it should not.

- a regular file (or a new path) is written atomically: a temporary file beside it, then a rename;
- a symbolic link is followed: its target is written atomically and the link stays;
- a character device (a terminal, ``/dev/null``) or a FIFO is streamed to, never replaced;
- ``-`` is standard output;
- anything else (a directory, a socket, a block device) is refused: OutputPathError, exit 2.

No torch import.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Union

from tcinspect import interrupts
from tcinspect.errors import OutputPathError, OutputWriteError

STDOUT = "-"


def is_stdout(path: Union[str, Path, None]) -> bool:
    return path is not None and str(path) == STDOUT


def write(path: Union[str, Path], text: str, *, option: str = "-o") -> str:
    """Write ``text`` to ``path`` as described above; returns how it was written ("file", "stream", "stdout").

    Raises OutputPathError for a path tcinspect will not write, OutputWriteError (a usage error that is also
    an OSError) when the write itself fails: "cannot write PATH: why; choose a writable path for OPTION".
    """
    try:
        return _write(path, text, option)
    except OutputPathError:
        raise
    except OSError as exc:
        raise OutputWriteError(f"cannot write {path}: {exc.strerror or exc}", f"choose a writable path for {option}",
                               exc) from None


def _write(path: Union[str, Path], text: str, option: str) -> str:
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return "stdout"
    p = Path(path)
    try:
        mode = os.stat(p).st_mode  # follows symbolic links
    except FileNotFoundError:
        mode = None  # a new file (or a link to one that does not exist yet)
    except NotADirectoryError:
        raise OutputPathError(f"cannot write {p}: a part of the path is not a directory",
                              f"choose another path for {option}") from None
    if mode is None or stat.S_ISREG(mode):
        # a link is resolved so that the rename replaces its target, not the link itself
        _replace(Path(os.path.realpath(p)) if p.is_symlink() else p, text)
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        # streamed, never replaced: replacing /dev/null with a file breaks the whole machine, and a
        # FIFO's reader would get nothing
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        return "stream"
    kind = ("a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")
    raise OutputPathError(f"{p} is {kind}, which tcinspect does not write",
                          f"give {option} a file name (or - for standard output)")


def _replace(p: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``p``, then rename it over ``p``: never half-written."""
    directory = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    interrupts.own(tmp)  # removed even if an interrupt ends the process before the rename
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp makes the file private (0600); a report gets the permissions any new file would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        interrupts.check()  # an interrupt that torch swallowed still leaves no output
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        interrupts.disown(tmp)
