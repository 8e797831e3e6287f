"""The comparisons bench/run.py runs, one module each (bench/harness.py runs their sides; bench/README.md says what
each row means):

- ``startup``: `tcinspect --help`, and `import tcinspect.cli` importing no torch
- ``peers``: `trace` against a bare torch.compile, TORCH_COMPILE_DEBUG, TORCH_TRACE + tlparse and depyf, warm and cold
- ``isolation``: `trace --timeout` (an isolated child) against `trace` in-process
- ``breaks``: `breaks` against `trace`, warm and cold
- ``saved_report``: reading a saved report (`trace --stage summary`, `codegen --kernel`)
- ``large_report``: reading a synthetic report of N FX nodes
- ``scaling_series``: tcinspect's own time and memory on generated models of growing size
"""
