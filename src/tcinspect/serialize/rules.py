"""What a saved report may lack: the sections written only when present, and the fields added to schema 1
after reports of it were saved. The builders, the consistency checks and the JSON Schema share these rules."""

from __future__ import annotations

import dataclasses
from typing import Any

from tcinspect import report as model
from tcinspect.report import sections

#: Report sections written only when present (see to_dict); every other field is always written. Registered in
#: report/sections.py.
OPTIONAL_SECTIONS = sections.FIELDS
#: Fields added to schema 1 after reports of it were saved: those reports lack them, which is no damage.
#: A field added from now on goes here (or SCHEMA_VERSION is bumped), except an option (``OPTIONS_OF_SCHEMA_1``);
#: any other missing key is refused.
ADDED_TO_SCHEMA_1 = frozenset({
    "Kernel.provenance", "Kernel.provenance_key", "Kernel.dynamo_nodes", "Kernel.modules", "Kernel.frames",
    "KernelTiming.in_step_us", "KernelTiming.in_step_kernels", "KernelBench.step",
    "RankReport.compile_time", "TensorCheck.fp64_rmse", "TensorCheck.eager_fp64_rmse", "Verification.reference",
    "Verification.first_divergence", "FirstDivergence.subsystem", "FirstDivergence.bisect_number",
    "FirstDivergence.debug_info",
    # the parse section's later counts are written only when set (to_dict)
    "ParseHealth.artifacts_not_understood", "ParseHealth.payload_mismatches", "ParseHealth.truncated_payloads",
    "ParseHealth.files_ignored",
    "OutputCode.collective_schedule",
    "CacheLookup.key", "CacheLookup.components", "CacheLookup.cost_s", "CacheLookup.changed",
    "CacheLookup.compared_with", "CacheLookup.remote",
    "ParseHealth.ignored_files", "RankReport.log", "RankReport.origin",
    "DynamoGraph.backend_error", "DynamoStage.backend_failures", "Summary.graphs_failed",
    "GraphBreak.model_frame", "PassRun.decomposed", "OutputCode.unknown_provenance", "ShapeGuard.stage", "ShapeGuard.in_final_guards",
    "RankReport.graph_execution_order",  # written only when torch logged one (to_dict)
    # written only when the report has coverage (to_dict); --no-timings leaves out the measured times
    "Summary.calls_captured", "Summary.unique_graphs", "Summary.fallbacks_to_eager",
    "RuntimeCoverage.compiled_time_us", "RuntimeCoverage.eager_time_us", "EagerIsland.time_us",
    "EagerIsland.module",  # read since runtime coverage names the module of each island
    # graph partitions under CUDA graphs
    "CudaGraphUse.partitions", "CudaGraphUse.partitions_from", "CudaGraphUse.kernels",
    "CudaGraphUse.kernels_in_cudagraphs", "CudaGraphs.unlogged_skips",
})
#: The options every report of schema 1 records. An option added since may be absent from a saved report:
#: the report was captured before the option existed, so it was not asked for (its default is what ran).
#: A new option is therefore not listed anywhere here.
OPTIONS_OF_SCHEMA_1 = frozenset({"backend", "mode", "fullgraph", "dynamic", "backward", "device", "passes",
                                 "verify", "rtol", "atol", "export", "dynamic_dims", "aoti", "bench"})
STAGE_STATUSES = (model.OK, model.FAILED, model.NOT_RUN)


#: the keys --no-timings leaves out of a section (report/sections.py: each section's ``timed`` paths, by their last
#: part): a report written so reads them back as their defaults. "*x" stands for every key ending in x.
_TIMED_KEYS = frozenset(path.rsplit(".", 1)[-1] for s in sections.SECTIONS for path in s.timed if path)


def _timed(name: str) -> bool:
    return name.endswith("_time_s") or any(name == k or (k.startswith("*") and name.endswith(k[1:]))
                                           for k in _TIMED_KEYS)


def may_be_absent(tp: type, f: dataclasses.Field[Any]) -> bool:
    """Whether a saved report may lack field ``f`` of class ``tp`` (any other missing key is damage)."""
    # *_time_s keys, and each section's measured values, are left out by --no-timings and read back as defaults
    return ((tp is model.Report and f.name in OPTIONAL_SECTIONS) or f"{tp.__name__}.{f.name}" in ADDED_TO_SCHEMA_1
            or (tp is model.Options and f.name not in OPTIONS_OF_SCHEMA_1) or _timed(f.name))
