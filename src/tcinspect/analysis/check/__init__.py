"""`tcinspect check`: budgets and baselines over reports. Pure: no torch, no printing; the command obtains the
reports and prints the outcome.

One module per idea, in the order a check run meets them:

- ``limits``: the ``--max-*`` / ``--min-*`` bounds, the counts they name, and [tool.tcinspect] in pyproject.toml
- ``outcome``: a finding (fail, improved, ok) and the run's outcome
- ``section_findings``: the budgets on a report's optional sections (coverage, CUDA graphs, memory, regions,
  guard latency), against a limit and against a baseline entry
- ``specializations``: ``--max-specializations`` / ``--static-ok`` and the baseline's specialized sources
- ``ranks``: ranks that diverge
- ``baseline``: a model's snapshot, the baseline file, and a report compared with its entry
- ``judge``: one model's report judged by its limits, its ranks and its baseline entry
- ``plan``: one run's models, limits and baseline from its options, checked before anything compiles; its verdict
"""
