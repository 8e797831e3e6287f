"""What the parser met and did not understand."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EventCount:
    """A structured-trace event name and how many times it was logged."""

    name: str
    count: int


@dataclass(frozen=True)
class ParseHealth:
    """What the parser met but did not understand: a sign that torch changed under tcinspect."""

    #: Structured-trace events tcinspect does not know by name (kept, not read), in first-seen order.
    unknown_events: tuple[EventCount, ...] = ()
    #: Lines of an events file that were not a structured-trace record (e.g. cut short by a crash).
    lines_not_understood: int = 0
    #: Known artifacts whose payload could not be read (e.g. a damaged provenance mapping: the kernels
    #: it describes are marked ``provenance: inferred``).
    artifacts_not_understood: tuple[EventCount, ...] = ()
    #: TORCH_TRACE logs: payloads whose md5 is not the record's has_payload (read as they are).
    payload_mismatches: int = 0
    #: TORCH_TRACE logs: a last payload cut short (the file ends inside it; the job was killed).
    truncated_payloads: int = 0
    #: TORCH_TRACE directories: files that are not rank logs, skipped.
    files_ignored: int = 0
    #: TORCH_TRACE directories: each file not read, and why (not a log, an older log of a rank, …).
    ignored_files: tuple[IgnoredFile, ...] = ()

    @property
    def damaged(self) -> bool:
        """Whether anything was not understood (``--strict`` fails on it); skipped files are not damage."""
        return bool(self.unknown_events or self.lines_not_understood or self.artifacts_not_understood
                    or self.payload_mismatches or self.truncated_payloads)


@dataclass(frozen=True)
class IgnoredFile:
    """A file of a TORCH_TRACE directory that was not read, and why."""

    #: its name below the directory
    name: str
    reason: str
