"""Structured-trace events, normalised across torch versions. No torch import.

Every other capture module reads ``Event`` objects, never raw records, so that differences in
how a torch version names or nests an event are handled here and nowhere else.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from tcinspect import jsonfast
from tcinspect.report import EventCount, ParseHealth

# Keys PyTorch adds beside an event's own metadata (torch/_logging/_internal.py, trace_structured).
_CONTEXT_KEYS = frozenset(
    {"call", "rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "has_payload", "stack",
     "severity", "timestamp", "pathname", "thread", "subgraph_name"}
)

# Events tcinspect has no use for; dropped at the handler so they cost nothing downstream.
IGNORED = frozenset({"str", "describe_storage", "describe_tensor", "describe_source"})

#: torch's timed spans (dynamo_timed / chromium_event_timed, torch/_dynamo/utils.py ChromiumEventLogger):
#: about 80% of all trace records. Each is kept compactly: its phase, name, time and the few arguments
#: tcinspect reads (parse/compile_time.py); the rest (cache-key components, configs) is dropped.
CHROMIUM_EVENT = "chromium_event"
_CHROMIUM_ARGS = ("compile_id", "is_backward", "cache_state", "cache_bypass_reason", "time_saved_ms")

#: tcinspect's own artifacts, logged on the same trace (capturing/custom.py): what a custom backend
#: was handed, and what each --pass changed.
BACKEND_INPUTS_ARTIFACT = "tcinspect_backend_inputs"
PASS_ARTIFACT = "tcinspect_pass"
#: tcinspect's record of a graph's kernel provenance (parse/provenance.py: OWN)
PROVENANCE_ARTIFACT = "tcinspect_provenance"
#: tcinspect's record of a CUDA graph skip torch logged (parse/cudagraphs.py: SKIP_ARTIFACT)
CUDAGRAPH_SKIP_ARTIFACT = "tcinspect_cudagraph_skip"
#: tcinspect's record of a graph's partitions and of each CUDA graph recording, from torch's ``cudagraphs`` debug
#: logs (parse/cudagraphs.py: PARTITIONS_ARTIFACT, RECORDING_ARTIFACT)
CUDAGRAPH_PARTITIONS_ARTIFACT = "tcinspect_cudagraph_partitions"
CUDAGRAPH_RECORDING_ARTIFACT = "tcinspect_cudagraph_recording"
#: tcinspect's record of each model call's tensor input shapes (parse/shapes.py)
CALL_SHAPES_ARTIFACT = "tcinspect_call_shapes"
#: tcinspect's per-call profile of the compiled model (capturing/percall.py, ``guards --per-call``)
PER_CALL_ARTIFACT = "tcinspect_per_call"
#: tcinspect's records for ``memory`` (parse/memory.py): each forward node's module, and Inductor's peak estimates
SAVED_MODULES_ARTIFACT = "tcinspect_saved_modules"
INDUCTOR_MEMORY_ARTIFACT = "tcinspect_inductor_memory"
#: Dynamo's run counters as the capture's calls ended (parse/coverage.py: calls_captured, frames run eagerly)
COUNTERS_ARTIFACT = "tcinspect_dynamo_counters"
#: tcinspect's measured call: the ATen ops it ran inside compiled regions and eagerly (parse/coverage.py)
RUNTIME_COVERAGE_ARTIFACT = "tcinspect_runtime_coverage"

#: Events the report is built from (assemble.py, ddp.py), besides tcinspect's own artifacts above.
PARSED = frozenset({
    "dynamo_start", "dynamo_output_graph", "dynamo_cpp_guards_str", "dynamo_graph_break_reason", "recompile_reasons",
    "compilation_metrics", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph", "aot_inference_graph",
    "inductor_post_grad_graph", "inductor_output_code", "optimize_ddp_split_graph", "optimize_ddp_split_child",
    "inductor_provenance_tracking_node_mappings", "inductor_provenance_tracking_kernel_stack_traces",
    # parse/cudagraphs.py: runtime_cudagraphify_time_us
    "compilation_metrics_runtime", "bwd_compilation_metrics_runtime",
    "inductor_collective_schedule",  # assemble.py: OutputCode.collective_schedule
    # dynamic shapes (parse/shapes.py); guard_on_data_dependent_error only under TORCH_DTRACE
    "create_symbol", "create_unbacked_symbol", "symbolic_shape_specialization", "guard_added_fast",
    "guard_on_data_dependent_error",
    "precompile_cache_bypass",
    # parse/graph_execution.py: the order the process ran its compiled graphs
    "graph_execution", "inductor_graph_execution",
    # assemble.py: older torch's names of the post-grad graph and of its post-grad -> pre-grad node provenance
    "after_post_grad_graph", "inductor_post_to_pre_grad_nodes",
})

#: Every other event torch 2.11-2.15 logs, which tcinspect knowingly does not read: the literal names of
#: the trace_structured calls in torch 2.13-2.15 and the names recorded from 2.11 (tests/data). Anything
#: else is counted in Report.parse, so that an event a new torch adds is reported, not dropped silently.
KNOWN_UNREAD = frozenset({
    "after_activation_quantization_bwd_aten_pass", "after_activation_quantization_fwd_aten_pass",
    "after_joint_graph", "after_pre_grad_graph", "aot_forward_graph_fw_metadata",
    "aot_forward_graph_fw_subclass_metadata", "aot_inference_graph_after_hop_passes",
    "aot_joint_graph_sync_decision_cross_ranks", "aot_saved_tensors_hooks_graphs", "artifact",
    "before_activation_quantization_bwd_aten_pass", "before_activation_quantization_fwd_aten_pass",
    "before_joint_graph", "before_post_grad_graph", "before_pre_grad_graph", "bwd_compilation_metrics",
    "compile_worker_sidecar_death",
    "compile_worker_status", "compiled_autograd_compile_reasons", "compiled_autograd_graph",
    "compiled_autograd_graph_pre_reordering", "compiler_collective",
    "dump_file", "dynamo_cache_bypass", "dynamo_cache_entries", "dynamo_cache_exception", "dynamo_error",
    "dynamo_guards", "dynamo_side_effects", "eager_compile_backwards_failure", "export", "exported_program",
    "expression_created", "fx_bucketing_passes_all_gather_buckets", "fx_bucketing_passes_reduce_scatter_buckets",
    "fx_compute_nodes_runtime_estimation", "fx_graph_bundled_cache_hit", "fx_graph_runnable", "fx_interpreter_error",
    "fx_net_acc_splitter_finder_events", "get_extra_remote_code_state", "graph_dump", "guard_added",
    "inductor_aot_header_code",
    "inductor_aot_kernel_code", "inductor_aot_wrapper_code", "inductor_autotune_at_compile_time_code",
    "inductor_fx_passes_overlap_bucketing", "inductor_input_graph",
    "inductor_overlap_cyclic_extra_deps", "inductor_runtime_and_tensor_meta", "inductor_spmd_graph_mismatch",
    "invoke_subgraph_backward_duplicate", "link", "make_fx_fail_partial", "min_cut_failed_edge_list",
    "min_cut_failed_fx_graph", "min_cut_failed_svg", "min_cut_information", "mismatched_fake_kernel",
    "missing_fake_kernel", "overlap_scheduling_graph_after", "overlap_scheduling_graph_before",
    "pge_profile_vs_analytical", "post_decomp_comms", "pre_bucketing_collective_sizes",
    "pre_bucketing_collective_sizes_after", "pre_bucketing_fsdp_collectives", "pre_decomp_comms",
    "propagate_real_tensors", "propagate_real_tensors_provenance", "put_local_code_state",
    "reorder_communication_preserving_peak_memory", "scheduler_nodes_before_comm_overlap", "sink_waits_iterative_info",
    "torch._functorch.config", "torch_version", "triton_kernel_info",
    "native_dsl_compile", "fx_collectives_estimations_after_overlap_bucketing",
    # AOTAutograd's runtime wrappers: six artifacts in 2.13-2.14 (none in the 2.11 GPU recordings), one in 2.15
    "backward_prologue", "backward_epilogue", "compiled_function_forward", "compiled_function_backward",
    "compiled_fn_wrapper", "runtime_wrapper_orchestration", "aot_autograd_runtime_wrappers",
    # the rest of the generated wrappers torch 2.13 logs through subclass_codegen._compile_and_exec_source
    # (an output that aliases an input, a mutated input, tensor subclasses, RNG, effect tokens, ...)
    "output_alias_wrapper", "mutation_epilogue", "subclass_wrapper", "backward_subclass_unwrap",
    "backward_subclass_wrapper", "functionalized_rng_wrapper", "effect_tokens_wrapper", "dedup_wrapper",
    "synthetic_base_wrapper",
    # older torch's names (2025 nightlies, tlparse's corpus) of what tcinspect reads under the current name or not
    # at all: the pre-grad graph (before_pre_grad_graph), and each kernel's post-grad nodes, which the node
    # mapping logged right after it holds too (cppCodeToPost of inductor_provenance_tracking_node_mappings)
    "inductor_pre_grad_graph", "inductor_triton_kernel_to_post_grad_nodes",
})
#: Names torch builds at run time: cache outcomes (hit, miss, bypass), bytecode of each compiled
#: frame, pattern-matcher and fusion passes, profile-guided code state, memory planning.
_KNOWN_PATTERN = re.compile(r"(fx_graph_cache|aotautograd_cache)_\w+|\w+_(ORIGINAL|MODIFIED)_BYTECODE"
                            r"|\w+_(pre|post)_grad|(optimus|cff)_\w+|\w+_fused|get_\w+_code_state|flex_gemm_\w+"
                            r"|\w+_ITERATIVE_RECOMPUTE_ERROR")


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
    #: Set for a frame compiled inside compiled autograd's backward graph (torch's CompileId).
    compiled_autograd_id: Optional[int] = None

    @functools.cached_property  # read for every event by every stage's grouping
    def compile_id(self) -> str:
        if self.frame_id is None:
            return ""
        if self.compiled_autograd_id is not None:  # torch's CompileId.__str__: "!ca/frame/compile"
            return f"!{self.compiled_autograd_id}/{self.frame_id}/{self.frame_compile_id}"
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
        name = str(value.get("name", "artifact")) if key == "artifact" and isinstance(value, dict) else key
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
        compiled_autograd_id=metadata.get("compiled_autograd_id"),
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
            payload = jsonfast.loads(payload)
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
    if ev.compiled_autograd_id is not None:
        meta["compiled_autograd_id"] = ev.compiled_autograd_id
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


def read_trace(path: Union[str, Path]) -> tuple[list[Event], int]:
    """Like ``read_jsonl``, but a line that is not a record is counted instead of raising.

    For files a process may have left half-written (a crashed or stopped capture).
    """
    out, bad = [], 0
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                meta = rec["meta"]
                name = event_name(meta)
                event = from_record(meta, rec.get("payload"), int(meta.get("call", -1)))
            except (ValueError, TypeError, KeyError, AttributeError):
                bad += 1
                continue
            if name not in IGNORED:
                out.append(event)
    return out, bad


def is_known(name: str) -> bool:
    """Whether tcinspect knows the event: reads it, or knows that it has no use for it."""
    return (name in PARSED or name in KNOWN_UNREAD or name in IGNORED
            or name in (BACKEND_INPUTS_ARTIFACT, PASS_ARTIFACT, PROVENANCE_ARTIFACT, CHROMIUM_EVENT,
                         CUDAGRAPH_SKIP_ARTIFACT, CUDAGRAPH_PARTITIONS_ARTIFACT, CUDAGRAPH_RECORDING_ARTIFACT,
                         CALL_SHAPES_ARTIFACT, PER_CALL_ARTIFACT,
                         SAVED_MODULES_ARTIFACT, INDUCTOR_MEMORY_ARTIFACT, COUNTERS_ARTIFACT,
                         RUNTIME_COVERAGE_ARTIFACT)
            or _KNOWN_PATTERN.fullmatch(name) is not None)


def parse_health(events: Iterable[Event], lines_not_understood: int = 0,
                 unreadable: Optional[dict[str, int]] = None, payload_mismatches: int = 0,
                 truncated_payloads: int = 0, files_ignored: int = 0) -> Optional[ParseHealth]:
    """What the parser did not understand in a run's events; None when it understood everything.

    ``unreadable``: known artifacts whose payload a stage parser could not read, by name
    (parse/provenance.py: ``unreadable``). The other counts are a TORCH_TRACE log's
    (parse/tracelog.py).
    """
    unknown: dict[str, int] = {}
    for ev in events:
        if not is_known(ev.name):
            unknown[ev.name] = unknown.get(ev.name, 0) + 1
    if not (unknown or lines_not_understood or unreadable or payload_mismatches or truncated_payloads or files_ignored):
        return None
    return ParseHealth(unknown_events=tuple(EventCount(n, c) for n, c in unknown.items()),
                       lines_not_understood=lines_not_understood,
                       artifacts_not_understood=tuple(EventCount(n, c) for n, c in (unreadable or {}).items()),
                       payload_mismatches=payload_mismatches, truncated_payloads=truncated_payloads,
                       files_ignored=files_ignored)


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
        return jsonfast.loads(ev.payload) if ev.payload else None
    except ValueError:
        return None
