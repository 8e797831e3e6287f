"""Large reports built from tcinspect's own report classes, shared by the tests and the benchmarks
(``bench/llm_report.py`` and ``bench/synthetic.py`` write them to files)."""
