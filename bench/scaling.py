"""The scaling series of bench/run.py: tcinspect's own time and memory on generated models of growing size,
and how they grow (log-log least-squares exponents)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field


@dataclass
class ScalePoint:
    """One generated model in the scaling series: per-run wall times, peak RSS and own-time parts."""

    nodes: int  # op lines asked for
    graphs: int  # graphs asked for (graph breaks + 1)
    tc: list = field(default_factory=list)
    bare: list = field(default_factory=list)
    tc_rss: list = field(default_factory=list)
    bare_rss: list = field(default_factory=list)
    own: list = field(default_factory=list)  # bench/owntime.py's dict per tcinspect run

    #: tcinspect's own work: the handler, events -> report, the cache entry, the YAML, the tables
    OWN_PARTS = ("record_s", "assemble_s", "cache_json_s", "yaml_s", "twin_json_s", "render_s")

    def part(self, name: str) -> float:
        return statistics.median(o.get(name, 0.0) for o in self.own)

    @property
    def own_s(self) -> float:
        return statistics.median(sum(o.get(k, 0.0) for k in self.OWN_PARTS) for o in self.own)

    @property
    def share(self) -> float:
        """Own work as a share of the whole `tcinspect trace` run, per run, median."""
        return statistics.median(sum(o.get(k, 0.0) for k in self.OWN_PARTS) / t for o, t in zip(self.own, self.tc))

    @property
    def rss_ratio(self) -> float:
        return statistics.median(a / b for a, b in zip(self.tc_rss, self.bare_rss))

    @property
    def fx_nodes(self) -> int:
        return self.own[0]["fx_nodes"] if self.own else 0

    @property
    def graph_count(self) -> int:
        return self.own[0]["graphs"] if self.own else 0

    def to_json(self) -> dict:
        d = asdict(self)
        d.update(fx_nodes=self.fx_nodes, graph_count=self.graph_count, own_s=self.own_s, share=self.share,
                 rss_ratio=self.rss_ratio, parts={k: self.part(k) for k in self.OWN_PARTS})
        return d


def fit_exponent(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The slope b of log y = a + b log x, least squares: y grows like x**b."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / den if den else float("nan")


def scaling_series(points: list[ScalePoint], graph_nodes: int) -> tuple[list[ScalePoint], list[ScalePoint]]:
    """The node series (one graph, growing) and the graph series (graph_nodes op lines, more graphs)."""
    by_nodes = sorted((p for p in points if p.graphs == 1), key=lambda p: p.nodes)
    by_graphs = sorted((p for p in points if p.nodes == graph_nodes), key=lambda p: p.graphs)
    return by_nodes, by_graphs


def fmt_scaling(points: list[ScalePoint], graph_nodes: int, backend: str, runs: int) -> str:
    header = ["op lines", "graphs", "FX nodes", "tcinspect s", "bare s", "ratio", "own s", "own %", "handler",
              "assemble", "cache", "YAML", "tables", "RSS tc/bare MiB", "RSS ratio"]
    body = []
    for p in points:
        ratio = statistics.median(a / b for a, b in zip(p.tc, p.bare))
        body.append([f"{p.nodes:,}", str(p.graph_count), f"{p.fx_nodes:,}", f"{statistics.median(p.tc):.2f}",
                     f"{statistics.median(p.bare):.2f}", f"{ratio:.2f}", f"{p.own_s:.3f}", f"{100 * p.share:.1f}",
                     *(f"{p.part(k):.3f}" for k in ScalePoint.OWN_PARTS),
                     f"{statistics.median(p.tc_rss) / 1024:.0f}/{statistics.median(p.bare_rss) / 1024:.0f}",
                     f"{p.rss_ratio:.2f}"])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [f"scaling: generated models (bench/generate.py), backend={backend}, medians of {runs} run(s); "
           "own = handler + assemble + cache entry + YAML + tables",
           line(header), "  ".join("-" * w for w in widths), *(line(b) for b in body)]
    by_nodes, by_graphs = scaling_series(points, graph_nodes)
    for label, series, x in (("FX nodes", by_nodes, lambda p: p.fx_nodes), ("graphs", by_graphs, lambda p: p.graph_count)):
        if len(series) < 2:
            continue
        xs = [x(p) for p in series]
        fits = {
            "own": [p.own_s for p in series],
            "own without YAML": [p.own_s - p.part("yaml_s") for p in series],
            "tcinspect total": [statistics.median(p.tc) for p in series],
            "bare total": [statistics.median(p.bare) for p in series],
        }
        out.append(f"growth with {label} ({', '.join(f'{v:,}' for v in xs)}), log-log least squares exponent: "
                   + ", ".join(f"{k} {fit_exponent(xs, ys):.2f}" for k, ys in fits.items()))
    return "\n".join(out)
