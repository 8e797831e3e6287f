"""Every private torch access tcinspect makes, in one place, version by version: one module per topic.

Supported: torch 2.11 (the GPU machines) to 2.15 (2.13-2.15 on the CPU machines). Each module says what it touches
and why, each function the torch versions it handles. Nothing outside this package reaches into ``torch._*``
(tests/test_layout.py checks it). A caller names the topic: ``from tcinspect.capturing import _compat``, then
``_compat.dynamo.reset_dynamo()``.

- ``trace``: the structured-trace logger the recorder listens on, tcinspect's own artifacts, torch's loggers quieted
- ``dynamo``: torch.compile, Dynamo's reset, counters, config, frames and cache entries
- ``exceptions``: whose code raised, and which compile stage
- ``caches``: Inductor's cache directory, a private one for ``--fresh``
- ``provenance``: Inductor's provenance tracking, and the module each graph node came from
- ``backends``: Inductor and aot_eager with an inner compiler, Inductor's decompositions, AOTInductor
- ``launches``: every kernel launch of an Inductor wrapper (``codegen --bench``)
- ``cudagraphs``: CUDA graph skips, partitions and recordings from torch's debug logs
- ``profiler``: a torch.profiler run's event tree (runtime coverage)
- ``bisector``: torch's CompilerBisector (verify)
- ``version``: the torch version a report records
"""

from tcinspect.capturing._compat import (
    backends,
    bisector,
    caches,
    cudagraphs,
    dynamo,
    exceptions,
    launches,
    profiler,
    provenance,
    trace,
    version,
)

__all__ = ["backends", "bisector", "caches", "cudagraphs", "dynamo", "exceptions", "launches", "profiler",
           "provenance", "trace", "version"]
