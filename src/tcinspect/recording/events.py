"""Structured-trace events, normalised across torch versions. No torch import.

Every other capture module reads ``Event`` objects, never raw records, so that differences in
how a torch version names or nests an event are handled here and nowhere else.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

# Keys PyTorch adds beside an event's own metadata (torch/_logging/_internal.py, trace_structured).
_CONTEXT_KEYS = frozenset(
    {"call", "rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "has_payload", "stack",
     "severity", "timestamp", "pathname", "thread", "subgraph_name"}
)

# Events tcinspect has no use for; dropped at the handler so they cost nothing downstream.
IGNORED = frozenset({"str", "describe_storage", "describe_tensor", "describe_source"})

#: torch's timed spans (dynamo_timed / chromium_event_timed, torch/_dynamo/utils.py ChromiumEventLogger):
#: about 80% of all trace records. Each is kept compactly: its phase, name, time and the few arguments
#: tcinspect reads (recording/compiletime.py); the rest (cache-key components, configs) is dropped.
CHROMIUM_EVENT = "chromium_event"
_CHROMIUM_ARGS = ("compile_id", "is_backward", "cache_state", "cache_bypass_reason", "time_saved_ms")

#: tcinspect's own artifacts, logged on the same trace (recording/custom.py): what a custom backend
#: was handed, and what each --pass changed.
BACKEND_INPUTS_ARTIFACT = "tcinspect_backend_inputs"
PASS_ARTIFACT = "tcinspect_pass"



@dataclass(frozen=True)
class Event:
    """One structured-trace record: its normalised name, compile id and payload."""

    name: str
    frame_id: Optional[int] = None
    frame_compile_id: Optional[int] = None
    attempt: int = 0
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    payload: str = ""
    #: The model call during which it was logged (0: example_inputs, k: input_sets[k - 1]), or -1.
    call: int = -1

    @property
    def compile_id(self) -> str:
        if self.frame_id is None:
            return ""
        return f"{self.frame_id}/{self.frame_compile_id}"


def event_name(metadata: dict[str, Any]) -> str:
    """The name of a raw record's event (an artifact's own name for artifacts).

    The same artifact is a top-level event in some versions and an "artifact" in others (torch
    2.13 logs inductor_post_grad_graph as an artifact on an FX graph cache miss and as a
    top-level event on a hit): both arrive under one name.
    """
    for key, value in metadata.items():
        if key in _CONTEXT_KEYS:
            continue
        if key == "artifact" and isinstance(value, dict):
            name = str(value.get("name", "artifact"))
        else:
            name = key
        return name
    return ""


def from_record(metadata: dict[str, Any], payload: Any, call: int = -1) -> Event:
    """Normalise one raw ``(record.metadata, record.payload)`` pair."""
    name = event_name(metadata)
    own = metadata.get("artifact") if "artifact" in metadata else metadata.get(name)
    if name == CHROMIUM_EVENT:
        own, payload = compact_span(own, payload), None
    if payload is None:
        text = ""
    elif isinstance(payload, str):
        text = payload
    else:
        text = json.dumps(payload)
    return Event(
        name=name,
        frame_id=metadata.get("frame_id"),
        frame_compile_id=metadata.get("frame_compile_id"),
        attempt=int(metadata.get("attempt") or 0),
        meta=own if isinstance(own, dict) else {},
        payload=text,
        call=call,
    )


def compact_span(meta: Any, payload: Any) -> dict[str, Any]:
    """A chromium_event as ``{"ph", "name", "ts", "args"}`` with only the arguments tcinspect reads.

    ``payload`` is torch's JSON text of the event (or the event itself); an event already made
    compact (a recorded trace) comes back unchanged.
    """
    if isinstance(meta, dict) and "ph" in meta:
        return meta
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return {}
    if not isinstance(payload, dict):
        return {}
    args = payload.get("args")
    kept = {k: args[k] for k in _CHROMIUM_ARGS if k in args and args[k] is not None} if isinstance(args, dict) else {}
    return {"ph": payload.get("ph", ""), "name": payload.get("name", ""), "ts": payload.get("ts", 0.0), "args": kept}


def to_json_line(ev: Event) -> str:
    """One event as a line that ``read_jsonl`` reads back."""
    meta = {ev.name: ev.meta, "frame_id": ev.frame_id, "frame_compile_id": ev.frame_compile_id,
            "attempt": ev.attempt, "call": ev.call}
    return json.dumps({"meta": meta, "payload": ev.payload}) + "\n"


def read_jsonl(path: Union[str, Path]) -> list[Event]:
    """Read a recorded trace: one ``{"meta": ..., "payload": ...}`` object a line (.gz too)."""
    out = []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if event_name(rec["meta"]) in IGNORED:
                continue
            out.append(from_record(rec["meta"], rec.get("payload"), int(rec["meta"].get("call", -1))))
    return out


def by_compile_id(events: Iterable[Event]) -> dict[str, list[Event]]:
    """Group events by compile id, keeping first-seen order of ids and of events."""
    groups: dict[str, list[Event]] = {}
    for ev in events:
        if ev.compile_id:
            groups.setdefault(ev.compile_id, []).append(ev)
    return groups


def named(events: Iterable[Event], *names: str) -> Iterator[Event]:
    return (e for e in events if e.name in names)


def json_payload(ev: Event) -> Any:
    try:
        return json.loads(ev.payload) if ev.payload else None
    except ValueError:
        return None
