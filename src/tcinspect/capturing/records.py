"""tcinspect's own records of the graphs it saw compiled, kept in tcinspect's cache directory.

An FX graph cache hit (or an AOTAutograd cache hit) brings back code without the compile that made it:
no kernel -> node statement for an untracked entry, no peak estimate, no module of each saved tensor.
tcinspect keeps what it recorded of each compile, keyed by the code as the user's own (untracked) run
writes it, so a warm cache, filled by the user's runs or tcinspect's, still finds the record of its
entries. The records live in ``$TCINSPECT_CACHE_DIR/inductor-records/`` (``.tcinspect/`` by default),
never in Inductor's cache directory: that one is the user's, and tcinspect writes nothing there that the
user's run would not. A process also keeps the records it wrote or read, so a notebook or a test suite
that points ``TCINSPECT_CACHE_DIR`` elsewhere between captures still finds them.

Records that earlier versions kept inside Inductor's cache directory (``tcinspect-provenance/``,
``tcinspect-memory/``) are read when no record of ours exists, copied here, and never written or removed:
deleting a folder in the user's cache is the user's decision.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Any, Literal, Optional

from tcinspect import cache, outfile
from tcinspect.errors import TcinspectError
from tcinspect.parse import memory as memory_mod
from tcinspect.parse import provenance

Kind = Literal["provenance", "memory", "partitions"]

#: below tcinspect's cache directory
FOLDER = "inductor-records"
#: the folders earlier versions wrote inside Inductor's cache directory, read only
LEGACY: dict[str, str] = {"provenance": provenance.STORE_FOLDER, "memory": memory_mod.STORE_FOLDER}
#: records kept on disk per kind (the least recently used go first) and in one process
KEEP = 4096

_IN_PROCESS: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()


def store_dir(kind: Kind) -> Path:
    """Where records of this kind are kept now (absolute: user code may change the working directory)."""
    return (cache.cache_dir() / FOLDER / kind).absolute()


def forget_in_process() -> None:
    """Drop the records this process holds (the disk store is left as it is)."""
    _IN_PROCESS.clear()


def _keep(kind: str, key: str, record: dict[str, Any]) -> None:
    _IN_PROCESS[(kind, key)] = record
    _IN_PROCESS.move_to_end((kind, key))
    while len(_IN_PROCESS) > KEEP:
        _IN_PROCESS.popitem(last=False)


class Store:
    """The records of one kind: remembered by code text, recalled by the same code."""

    def __init__(self, kind: Kind, directory: Path, legacy_root: Optional[str] = None) -> None:
        self.kind = kind
        self.dir = directory
        #: Inductor's cache directory, where an earlier version may have left records (read only)
        self.legacy = Path(legacy_root) / LEGACY[kind] if legacy_root and kind in LEGACY else None
        self.written = 0

    def remember(self, text: str, record: dict[str, Any]) -> None:
        """Keep ``record`` for this code; an unwritable store only means a later warm run infers more."""
        key = provenance.store_key(text)
        _keep(self.kind, key, record)
        try:
            _gitignore(self.dir.parent.parent)
            provenance.remember(self.dir, text, record)
            self.written += 1
        except (OSError, TcinspectError):
            pass

    def recall(self, text: str) -> Optional[dict[str, Any]]:
        key = provenance.store_key(text)
        kept = _IN_PROCESS.get((self.kind, key))
        if kept is not None:
            _IN_PROCESS.move_to_end((self.kind, key))
            return kept
        found = provenance.recall(self.dir, text)
        if found is None and self.legacy is not None:
            found = provenance.recall(self.legacy, text)
            if found is not None:
                self.remember(text, found)  # migrated: read here from now on
        elif found is not None:
            try:
                os.utime(self.dir / f"{key}.json")  # recently used records are the ones kept
            except OSError:
                pass
        if found is not None:
            _keep(self.kind, key, found)
        return found

    def prune(self) -> None:
        """Keep the ``KEEP`` most recently used records on disk (only after this store wrote some)."""
        if not self.written:
            return
        try:
            files = sorted(self.dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[KEEP:]:
                old.unlink()
        except OSError:
            pass


def _gitignore(root: Path) -> None:
    # tcinspect's cache directory is ignored by git as a whole, as the report cache makes it
    ignore = root / ".gitignore"
    if not os.path.lexists(ignore):
        root.mkdir(parents=True, exist_ok=True)
        outfile.write(ignore, "# created by tcinspect: a cache of reports\n*\n")
