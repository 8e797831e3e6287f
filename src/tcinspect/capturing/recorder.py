"""The Recorder: a logging handler on torch's structured trace that keeps every event of interest, in order.

Besides torch's own events it logs tcinspect's records of what it saw compiled (provenance, partitions, saved
modules, memory estimates: kept by the code or graph they belong to, so an FX graph or AOTAutograd cache hit logs the
same record as the compile that filled the cache), and in an isolated child streams every event to a file.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Any, Optional

from tcinspect.capturing import _compat, records
from tcinspect.parse import cudagraphs, inductor, provenance, shapes
from tcinspect.parse import events as ev_mod
from tcinspect.parse import memory as memory_mod
from tcinspect.parse.fxgraph import parse_graph

#: Set by the parent of an isolated capture (--timeout): where the child streams its events.
EVENTS_FILE_ENV = "TCINSPECT_EVENTS_FILE"


class Recorder(logging.Handler):
    """A logging handler that keeps every structured-trace event of interest, in order."""

    def __init__(self, stream: Optional[str] = None) -> None:
        super().__init__(level=logging.DEBUG)
        self.events: list[ev_mod.Event] = []
        self.call = -1  # which model call is running (set by the capture loop)
        self.paused = False  # set while tcinspect makes a call of its own after the record
        # in an isolated child, every event is also appended to a file as it arrives, so that a
        # crash or a timeout still leaves the stages recorded before it
        self._stream = open(stream, "a", encoding="utf-8") if stream else None  # noqa: SIM115 - closed by close()
        self.seconds = 0.0  # spent in emit(): tcinspect's own share of the compile (Report.timings)
        self._wrapper = ""  # the last inductor_output_code, which provenance records are keyed by
        self._mapping = ""  # the last node-mapping artifact (its postToPre goes into the record)
        self._post_grad = ""  # the last post-grad graph (its node outline goes into the record)
        #: str(id(module)) -> its name in the user's model, so module paths start at the user's root
        self.module_names: dict[str, str] = {}
        self._estimate = ""  # Inductor's last peak estimate, for the output code that follows it
        #: the output code modules Inductor wrote or loaded (tracked ones a miss wrote are removed after)
        self.output_code_files: list[str] = []
        #: tcinspect's records of what it saw compiled, in its own cache directory (never Inductor's)
        self._stores: dict[str, records.Store] = {}
        # resolved now: the model file may change the working directory, and the default is relative to it
        self._store_dirs = {kind: records.store_dir(kind) for kind in ("provenance", "memory", "partitions")}
        #: under a CUDA-graph mode on a GPU: torch's partition and recording debug logs
        #: (_compat.cudagraphs.PartitionLog)
        self.partition_log: Optional[_compat.cudagraphs.PartitionLog] = None

    def store(self, kind: records.Kind) -> records.Store:
        if kind not in self._stores:
            # Inductor's cache directory resolves when first needed (--fresh points it elsewhere first),
            # only to read records earlier versions left there
            self._stores[kind] = records.Store(kind, self._store_dirs[kind], _compat.caches.inductor_cache_dir())
        return self._stores[kind]

    def emit(self, record: logging.LogRecord) -> None:
        start = time.perf_counter()
        self._keep(record)
        self.seconds += time.perf_counter() - start

    def _keep(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        if ev_mod.event_name(metadata) in ev_mod.IGNORED:
            return
        event = ev_mod.from_record(metadata, getattr(record, "payload", None), self.call)
        if event.name in shapes.WITH_FRAMES:
            event = replace(event, meta=shapes.name_files(event.meta, _compat.trace.interned_files()))
        if event.name == "inductor_output_code":
            self._estimates(event)
        self._add(event)
        if event.name == "inductor_output_code":
            self._partitions(event)
            self._wrapper = event.payload
            path = event.meta.get("file_path") if isinstance(event.meta, dict) else None
            if isinstance(path, str) and path:
                self.output_code_files.append(path)
        elif event.name == "inductor_post_grad_graph":
            self._post_grad = event.payload
        elif event.name == provenance.NODE_MAPPINGS:
            self._mapping = event.payload
        elif event.name == provenance.STACK_TRACES:
            self._provenance(event)
        elif event.name == "aot_forward_graph":
            self._saved_modules(event)
        elif event.name == ev_mod.INDUCTOR_MEMORY_ARTIFACT:
            self._estimate = event.payload

    def add_call_shapes(self, call: int, shapes_of_call: list[dict[str, Any]]) -> None:
        """tcinspect's record of one model call's tensor input shapes (the shapes view's observed inputs)."""
        if shapes_of_call:
            self._add(ev_mod.Event(name=ev_mod.CALL_SHAPES_ARTIFACT, meta={"name": ev_mod.CALL_SHAPES_ARTIFACT},
                                   payload=json.dumps(shapes_of_call), call=call))

    def add_artifact(self, name: str, payload: str, call: int) -> None:
        """Log one of tcinspect's own JSON artifacts on the trace (parse/events.py names them)."""
        self._add(ev_mod.Event(name=name, meta={"name": name, "encoding": "json"}, payload=payload, call=call))

    def _add(self, event: ev_mod.Event) -> None:
        if self.paused:  # a call made after the record (runtime coverage's): what it logs is no part of the run
            return
        self.events.append(event)
        if self._stream is not None:
            self._stream.write(ev_mod.to_json_line(event))
            self._stream.flush()

    def _provenance(self, after: ev_mod.Event) -> None:
        """Log tcinspect's record of the graph whose provenance artifacts Inductor just logged."""
        where, record = _compat.provenance.provenance_snapshot(self.module_names)
        store = self.store("provenance")
        if where == "compile":
            stacks = provenance.json_dict(after.payload)
            if stacks:
                record["stacks"] = stacks
            pre = provenance.json_dict(self._mapping).get("postToPre")
            if isinstance(pre, dict) and pre:
                record["post_to_pre"] = pre
            record["launches"] = [[k.name, k.provenance_key] for k in inductor.parse_output_code(self._wrapper)]
            if self._post_grad:
                record["post_grad"] = provenance.outline(parse_graph("inductor_post_grad_graph", self._post_grad))
            store.remember(self._wrapper, record)
        elif where == "cache_hit":
            record = store.recall(self._wrapper) or {}
        if record:
            self._add(replace(after, name=provenance.OWN, meta={"name": provenance.OWN, "encoding": "json"},
                              payload=json.dumps(record)))

    def _partitions(self, output: ev_mod.Event) -> None:
        """Log the partitions torch's scheduler logged for the graph whose output code was just logged (under a
        CUDA-graph mode), kept by that code: an FX graph cache hit, which schedules nothing, finds them there."""
        if self.partition_log is None:
            return
        record = self.partition_log.take()
        store = self.store("partitions")
        if record is not None:
            store.remember(output.payload, record)
        elif cudagraphs.PARTITIONED in output.payload:
            record = store.recall(output.payload)
        if record:
            record = {**record, "compile_id": output.compile_id, "aot_id": inductor.aot_id_of(output.payload)}
            self._add(replace(output, name=cudagraphs.PARTITIONS_ARTIFACT, payload=json.dumps(record),
                              meta={"name": cudagraphs.PARTITIONS_ARTIFACT, "encoding": "json"}))

    def cudagraph_recording(self, record: dict[str, Any]) -> None:
        """Log on the trace one CUDA graph recording torch logged on its cudagraphs debug log (parse/cudagraphs.py)."""
        frame, _, attempt = str(record.get("compile_id") or "").partition("/")
        self._add(ev_mod.Event(
            name=cudagraphs.RECORDING_ARTIFACT, frame_id=int(frame) if frame.isdigit() else None,
            frame_compile_id=int(attempt) if attempt.isdigit() else None,
            meta={"name": cudagraphs.RECORDING_ARTIFACT, "encoding": "json"}, payload=json.dumps(record),
            call=self.call))

    def cudagraph_skip(self, message: str, compile_id: str, part: str) -> None:
        """Log on the trace a CUDA graph skip torch logged only on its cudagraphs log (parse/cudagraphs.py)."""
        frame, _, attempt = compile_id.partition("/")
        self._add(ev_mod.Event(
            name=cudagraphs.SKIP_ARTIFACT, frame_id=int(frame) if frame.isdigit() else None,
            frame_compile_id=int(attempt) if attempt.isdigit() else None,
            meta={"name": cudagraphs.SKIP_ARTIFACT, "encoding": "json"},
            payload=json.dumps(cudagraphs.skip_record(message, compile_id, part)), call=self.call))

    def _memory_store(self) -> records.Store:
        return self.store("memory")

    def _saved_modules(self, graph: ev_mod.Event) -> None:
        """Log each forward node's module; kept by the graph's text, so an AOTAutograd cache hit (no graph
        module to read) logs the same record as the compile that filled the cache."""
        modules, note = _compat.provenance.saved_modules(self.module_names)
        store = self._memory_store()
        if not note:
            store.remember(graph.payload, {"modules": modules})
        else:
            kept = store.recall(graph.payload)
            if kept is not None and isinstance(kept.get("modules"), dict):
                modules, note = kept["modules"], ""
        self._add(replace(graph, name=ev_mod.SAVED_MODULES_ARTIFACT,
                          meta={"name": ev_mod.SAVED_MODULES_ARTIFACT, "encoding": "json"},
                          payload=memory_mod.modules_record(modules, note)))

    def _estimates(self, code: ev_mod.Event) -> None:
        """Keep Inductor's peak estimates by the output code they were made for; on an FX graph cache hit
        (no scheduling, no estimate) log the kept ones before the code, as a compile would."""
        store = self._memory_store()
        if self._estimate:
            store.remember(code.payload, {"estimate": self._estimate})
        else:
            kept = store.recall(code.payload)
            if kept is not None and isinstance(kept.get("estimate"), str):
                self._add(replace(code, name=ev_mod.INDUCTOR_MEMORY_ARTIFACT,
                                  meta={"name": ev_mod.INDUCTOR_MEMORY_ARTIFACT, "encoding": "json"},
                                  payload=kept["estimate"]))
        self._estimate = ""

    def close(self) -> None:
        for store in self._stores.values():
            store.prune()
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        super().close()
