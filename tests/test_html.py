"""The HTML page and the graph pictures: renderers without a browser, then the page in headless Chromium.

The browser tests need Debian's chromium (/usr/bin/chromium) and Python Playwright; they are skipped
without them. Set TCINSPECT_SCREENSHOT=docs/report-screenshot.png to also save the README's
screenshot of sample_models/tiny.py's page.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders.reports import make_report
from helpers import ROOT, cli
from tcinspect import serialize
from tcinspect.render import dot as graphviz
from tcinspect.render import drawing, html, htmlparts, layered, picture
from tcinspect.report import (
    AotGraphs,
    AotStage,
    DynamoGraph,
    DynamoStage,
    Graph,
    GraphBreak,
    InductorStage,
    Kernel,
    Node,
    OutputCode,
    Report,
    SourceLocation,
    Stages,
    Target,
)

EVIL = "<script>alert(1)</script>"
CHROMIUM = Path("/usr/bin/chromium")  # the `browser` fixture (conftest.py) launches it, once per session

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's `dot` is not installed "
                               "(apt-get install graphviz)")


# ----------------------------------------------------------------------------- a hand-built report


def _loc(line: int, code: str) -> SourceLocation:
    return SourceLocation("model.py", line, "forward", code)


def hand_report() -> Report:
    """Two Dynamo graphs split by a graph break; one Inductor output with an extern and two fused kernels."""
    t = ("f32", ("8", "8"))
    dyn = Graph("dynamo_output_graph", "def forward(self, L_x_, L_w_): ...", (
        Node("placeholder", "l_x_", "L_x_", "", "f32", ("8", "4")),
        Node("placeholder", "l_w_", "L_w_", "", "f32", ("4", "8")),
        Node("call_function", "mm", "torch.mm", "l_x_, l_w_", *t, source=_loc(3, "y = x @ w")),
        Node("call_function", "relu", "torch.relu", "mm", *t, source=_loc(4, "y = y.relu()")),
        Node("call_function", EVIL, "operator.mul", "relu, 2", *t, source=_loc(5, "y = y * 2")),
        Node("output", "output", "output", EVIL),
    ))
    resumed = Graph("dynamo_output_graph", "def forward(self, L_y_): ...", (
        Node("placeholder", "l_y_", "L_y_", "", *t),
        Node("call_function", "add", "operator.add", "l_y_, 1", *t, source=_loc(7, "return y + 1")),
        Node("output", "output", "output", "add"),
    ))
    post = Graph("inductor_post_grad_graph", "def forward(self, primals_1, primals_2): ...", (
        Node("placeholder", "primals_1", "primals_1", "", "f32", ("8", "4")),
        Node("placeholder", "primals_2", "primals_2", "", "f32", ("4", "8")),
        Node("call_function", "mm", "aten.mm.default", "primals_1, primals_2", *t, source=_loc(3, "y = x @ w")),
        Node("call_function", "relu", "aten.relu.default", "mm", *t, source=_loc(4, "y = y.relu()")),
        Node("call_function", "mul", "aten.mul.Tensor", "relu, 2", *t, source=_loc(5, "y = y * 2")),
        Node("call_function", "sum_1", "aten.sum.default", "mul", "f32", (), source=_loc(5, "y = y * 2")),
        Node("output", "output", "output", "mul, sum_1"),
    ))
    kernels = (
        Kernel("mm", "extern", "", ("mm", "primals_1"), ("aten.mm",), ("model.py:3",),
               "extern_kernels.mm(primals_1, primals_2, out=buf0)"),
        Kernel("cpp_fused_mul_relu_0", "cpp", "cpp", ("relu", "mul"), ("aten.relu", "aten.mul"),
               ("model.py:4", "model.py:5"), "cpp_fused_mul_relu_0(buf0)",
               source='extern "C" void kernel(float* in_out_ptr0) { /* a < b && c */ }\n'),
        Kernel("cpp_fused_sum_1", "cpp", "cpp", ("sum_1",), ("aten.sum",), ("model.py:5",), "cpp_fused_sum_1(buf0, buf1)",
               source='extern "C" void kernel(const float* in_ptr0, float* out_ptr0) {}\n'),
    )
    brk = GraphBreak("0/0", _loc(6, 'print("<b>&</b>")'), "Failed to trace builtin operator", "GB0059",
                     reason="attempting to trace CALL", explanation="print is a side effect & <cannot> be traced",
                     hints=("remove the print",), fix="Remove the print",
                     context=((5, "    y = y * 2"), (6, '    print("<b>&</b>")'), (7, "    return y + 1")))
    stages = Stages(
        DynamoStage("ok", "", (DynamoGraph("0/0", "forward", "model.py", 1, dyn),
                               DynamoGraph("1/0", "torch_dynamo_resume_in_forward_at_6", "model.py", 6, resumed)),
                    (brk,)),
        AotStage("ok", "", (AotGraphs("0/0", forward=Graph("aot_forward_graph", "def forward(self): ...",
                                                           post.nodes, ("relu",))),)),
        InductorStage("ok", "", (OutputCode("0/0", "0_forward", "forward", "def call(args): ...", kernels, post,
                                            "miss"),)),
    )
    return make_report(torch_version="2.13.0+cpu", target=Target(kind="model", path="model.py",
                                                                                model_name="model"),
                       stages=stages, calls=1, tcinspect_version="0.1.0")


def chain_report(nodes: int, graphs: int = 1) -> Report:
    """Graphs of ``nodes`` chained multiplications each (no Inductor)."""
    dgs = []
    for g in range(graphs):
        ns = (Node("placeholder", "x", "L_x_", "", "f32", ("4",)),
              *(Node("call_function", f"mul_{i}", "operator.mul", f"{'x' if i == 0 else f'mul_{i - 1}'}, 2", "f32",
                     ("4",)) for i in range(nodes - 2)),
              Node("output", "output", "output", f"mul_{nodes - 3}"))
        dgs.append(DynamoGraph(f"{g}/0", "forward", "model.py", 1, Graph("dynamo_output_graph", "", ns)))
    return make_report(torch_version="2.13.0+cpu", target=Target(kind="model", path="chain.py"),
                       stages=Stages(DynamoStage("ok", "", tuple(dgs))))


def node_line(dot: str, name: str) -> str:
    """The DOT statement of the node whose label starts with ``name``."""
    lines = [ln for ln in dot.splitlines() if f"label=<<B>{graphviz.label_text(name)}</B>" in ln]
    assert len(lines) == 1, (name, lines)
    return lines[0]


def attr(line: str, key: str) -> str:
    m = re.search(rf'\b{key}=("([^"]*)"|[\w#]+)', line)
    return (m.group(2) if m.group(2) is not None else m.group(1)) if m else ""


# ----------------------------------------------------------------------------- renderers, no browser


def test_page_is_one_self_contained_file():
    page = html.render(hand_report())
    assert page.startswith("<!DOCTYPE html>")
    for needle in ("http://", "https://", "src=", "<link", "@import", "url(", "<iframe", "<object", "<embed"):
        assert needle not in page.lower(), needle
    assert not re.search(r'href="(?!#)', page)  # only in-page anchors
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in csp
    # one executable script, allowed by its hash; the other script elements are inert text
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp
    assert all(m == '<script type="text/html">' for m in re.findall(r"<script[^>]*>", page) if m != "<script>")


def test_names_and_texts_are_escaped():
    page = html.render(hand_report())
    assert EVIL not in page and "alert(1)</script>" not in page
    assert htmlparts.esc(EVIL) in page
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in page  # the break's source line
    assert "&amp; &lt;cannot&gt; be traced" in page
    dot = graphviz.dot_source(picture.pictures(hand_report())).text
    assert EVIL not in dot and "&lt;script&gt;alert(1)&lt;/script&gt;" in dot


def test_label_text_escapes_html_and_dot():
    assert graphviz.label_text('a<b>&"c') == "a&lt;b&gt;&amp;&quot;c"
    assert graphviz.label_text("\\N x\\") == "\\\\N x\\\\"  # dot would print the node's name for \N
    assert graphviz.label_text("x" * 100, 10) == "x" * 9 + "…"


@needs_dot
def test_hostile_labels_lay_out():
    rep = hand_report()
    nodes = rep.stages.dynamo.graphs[0].graph.nodes
    odd = (*nodes[:2], Node("call_function", 'q"uote\\N\\', "back\\slash", "l_x_", "f32", ("8",)), *nodes[2:])
    graph = Graph("dynamo_output_graph", "", odd)
    pic = picture.Picture("0/0", 'title "with" <odd> \\G', graph)
    out = graphviz.run_dot(graphviz.dot_source([pic]).text)
    assert "q&quot;uote\\N\\" in out and "back\\slash" in out and "&lt;odd&gt; \\G" in out


def test_kernels_colour_the_nodes_they_fused():
    rep = hand_report()
    pics = {p.key: p for p in picture.pictures(rep)}
    post = pics["0_forward"]
    assert {k: v.name for k, v in post.kernels.items()} == {
        "mm": "mm", "relu": "cpp_fused_mul_relu_0", "mul": "cpp_fused_mul_relu_0", "sum_1": "cpp_fused_sum_1"}
    # Dynamo nodes: by name, else by source line
    assert {k: v.name for k, v in pics["0/0"].kernels.items()} == {
        "mm": "mm", "relu": "cpp_fused_mul_relu_0", EVIL: "cpp_fused_mul_relu_0"}

    dot = graphviz.dot_source([post]).text
    relu, mul, total, mm = (node_line(dot, n) for n in ("relu", "mul", "sum_1", "mm"))
    assert attr(relu, "fillcolor") == attr(mul, "fillcolor") == picture.PALETTE[0]
    assert attr(total, "fillcolor") == picture.PALETTE[1] != attr(relu, "fillcolor")
    assert attr(mm, "fillcolor") == picture.EXTERN_FILL and attr(mm, "peripheries") == "2"
    assert attr(relu, "shape") == "box" and "peripheries" not in relu
    inputs = node_line(dot, "primals_1")
    assert attr(inputs, "shape") == picture.SHAPES["placeholder"][0] == "invhouse"
    assert attr(node_line(dot, "output"), "shape") == "house"
    assert len({attr(x, "shape") + attr(x, "peripheries") + attr(x, "style") for x in (relu, mm, inputs)}) == 3
    # the legend names every kernel
    assert all(name in dot for name in ("cpp_fused_mul_relu_0", "cpp_fused_sum_1", "extern mm"))


def test_graph_breaks_are_drawn_between_graphs():
    dot = graphviz.dot_source(picture.pictures(hand_report())).text
    brk = [ln for ln in dot.splitlines() if "graph break" in ln and "octagon" in ln]
    assert len(brk) == 1
    assert "Failed to trace builtin operator (GB0059)" in brk[0] and "model.py:6 in forward" in brk[0]
    brk_id = brk[0].split()[0]
    last = f"g0_n{len(hand_report().stages.dynamo.graphs[0].graph.nodes) - 1}"  # the first graph's output
    assert f"{last} -> {brk_id} " in dot  # the break ends the first graph ...
    assert f"{brk_id} -> g1_n0 " in dot and "next graph" in dot  # ... and the second graph follows it


def test_large_graphs_are_cut_and_say_so(monkeypatch):
    rep = chain_report(graphviz.MAX_GRAPH_NODES + 500)
    d = graphviz.dot_source(picture.pictures(rep))
    assert d.drawn == graphviz.MAX_GRAPH_NODES
    assert d.notes and f"first {graphviz.MAX_GRAPH_NODES:,} of {graphviz.MAX_GRAPH_NODES + 500:,}" in d.notes[0]
    assert "more nodes not drawn" in d.text
    # one picture holds at most MAX_PICTURE_NODES: the graphs past it are named, not drawn
    d = graphviz.dot_source(picture.pictures(chain_report(graphviz.MAX_PICTURE_NODES // 2, 3)))
    assert d.drawn == graphviz.MAX_PICTURE_NODES and len(d.notes) == 1 and "2/0" in d.notes[0]
    assert "not drawn" in d.notes[0] and "g2_skipped" in d.text and "g2_n0" not in d.text
    # a page draws at most MAX_PAGE_NODES in all; graphs past DOT_NODES are laid out without dot
    laid_out = []
    monkeypatch.setattr(graphviz, "run_dot", lambda text, timeout=0: laid_out.append(text) or "<svg></svg>")
    graphs = drawing.MAX_PAGE_NODES // layered.LAYERED_MAX_NODES + 1
    page = html.render(chain_report(layered.LAYERED_MAX_NODES + 500, graphs))
    assert not laid_out and "Cut short" in page
    assert page.count("Not drawn: this page draws at most") == 1
    assert "--format svg --graph" in page


def test_page_without_graphviz_is_drawn_by_the_own_layout_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    page = html.render(hand_report())
    assert "Drawn by tcinspect's own layered layout: Graphviz's <code>dot</code> was not found" in page
    assert "apt-get install graphviz" in page
    assert page.count("<svg") == len(picture.pictures(hand_report())) > 0
    assert "cpp_fused_mul_relu_0" in page  # everything else is still there


def test_missing_dot_draws_the_svg_with_the_own_layout(monkeypatch, tmp_path, capsys):
    saved = tmp_path / "report.yaml"
    saved.write_text(serialize.dumps(hand_report(), "yaml"))
    monkeypatch.setenv("PATH", str(tmp_path))
    out = tmp_path / "graph.svg"
    code, stdout, err = cli(capsys, "trace", str(saved), "--format", "svg", "-o", str(out))
    assert code == 0 and not stdout and "Traceback" not in err
    drawing = out.read_text()
    assert drawing.startswith("<?xml") and "<svg" in drawing and "cpp_fused_mul_relu_0" in drawing


def test_tiny_page_lists_every_kernel_and_the_summary(tiny_report):
    page = html.render(tiny_report)
    s = tiny_report.summary
    names = [k.name for o in tiny_report.stages.inductor.outputs for k in o.kernels]
    assert names and all(f">{n}<" in page for n in names)
    cards = dict(re.findall(r'data-key="(\w+)"><b>([^<]*)</b>', page))
    assert cards["graphs"] == str(s.graphs) and cards["kernels"] == str(s.kernels) == str(len(names))
    assert cards["guards"] == str(s.guards) and cards["graph_breaks"] == str(s.graph_breaks)
    assert cards["recompiles"] == str(s.recompiles) and cards["aot_graphs"] == str(s.aot_graphs)
    # extern kernels claim the node of their own op
    for o in tiny_report.stages.inductor.outputs:
        refs = picture.post_grad_kernels(o)
        nodes = {n.name: n for n in o.post_grad_graph.nodes}
        for name, ref in refs.items():
            if ref.extern:
                assert nodes[name].target.split(".")[1] == ref.name
        generated = {k.name for k in o.kernels if k.kind != "extern"}
        assert generated <= {r.name for r in refs.values()}  # every generated kernel colours some node


def test_cli_writes_html_and_svg_by_suffix(tmp_path, capsys):
    saved = tmp_path / "report.yaml"
    saved.write_text(serialize.dumps(hand_report(), "yaml"))
    page = tmp_path / "report.html"
    code, out, err = cli(capsys, "trace", str(saved), "-o", str(page), "--stage", "summary")
    assert code == 0 and f"wrote {page} (html)" in err
    assert page.read_text().startswith("<!DOCTYPE html>") and "Summary" in out  # tables still on stdout
    code, out, err = cli(capsys, "trace", str(saved), "--format", "html")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and "cpp_fused_sum_1" in out
    code, _, err = cli(capsys, "trace", str(saved), "--graph", "0/0")
    assert code == 2 and "--graph" in err and "--format svg" in err


@needs_dot
def test_cli_svg(tmp_path, capsys):
    saved = tmp_path / "report.yaml"
    saved.write_text(serialize.dumps(hand_report(), "yaml"))
    out_file = tmp_path / "graphs.svg"
    code, _, err = cli(capsys, "trace", str(saved), "-o", str(out_file))
    assert code == 0 and "(svg)" in err
    text = out_file.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and 'xmlns="http://www.w3.org/2000/svg"' in text
    assert f'fill="{picture.PALETTE[0]}"' in text and f'fill="{picture.EXTERN_FILL}"' in text
    assert f'fill="{picture.BREAK_FILL}"' in text and "cluster_1" in text
    code, out, _ = cli(capsys, "trace", str(saved), "--format", "svg", "--graph", "0_forward")
    assert code == 0 and "cluster_0" in out and "cluster_1" not in out and "inductor_post_grad_graph" in out
    code, _, err = cli(capsys, "trace", str(saved), "--format", "svg", "--graph", "9/9")
    assert code == 2 and "no graph '9/9'" in err and "0/0, 1/0, 0_forward" in err


def test_renderers_do_not_import_torch():
    code = ("import sys, tcinspect.render.html, tcinspect.render.svg; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ----------------------------------------------------------------------------- in a browser


def _browser_missing() -> str:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "Python Playwright is not installed (pip install playwright)"
    return ""


needs_browser = pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")


class Opened:
    """A page opened from a file, with what it logged and requested."""

    def __init__(self, browser, path: Path, viewport=(1280, 1000)) -> None:
        self.page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.url = path.resolve().as_uri()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def load_ms(self) -> float:
        """Navigate, and return the load event's end from the navigation's start (Navigation Timing)."""
        self.page.goto(self.url, wait_until="load")
        return self.page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")

    def text(self, selector: str) -> list[str]:
        return [t.strip() for t in self.page.locator(selector).all_text_contents()]


def _write(tmp_path: Path, rep: Report, name: str) -> Path:
    path = tmp_path / name
    path.write_text(html.render(rep), encoding="utf-8")
    return path


@needs_browser
def test_tiny_page_in_the_browser(browser, tiny_report, tmp_path):
    opened = Opened(browser, _write(tmp_path, tiny_report, "tiny.html"))
    opened.load_ms()
    page, s = opened.page, tiny_report.summary
    for key, value in (("graphs", s.graphs), ("graph_breaks", s.graph_breaks), ("recompiles", s.recompiles),
                       ("guards", s.guards), ("aot_graphs", s.aot_graphs), ("kernels", s.kernels)):
        assert opened.text(f'#summary [data-key="{key}"] b') == [str(value)], key
    assert opened.text('#summary [data-key="compile_time_s"] b') == [f"{s.compile_time_s:.2f} s"]
    names = [k.name for o in tiny_report.stages.inductor.outputs for k in o.kernels]
    assert opened.text("#inductor td.kname") == names
    for name in names:
        assert page.get_by_text(name, exact=True).first.is_visible()
    if shutil.which("dot"):
        pictures = page.locator(".svg svg")
        assert pictures.count() == len(picture.pictures(tiny_report))
        box = pictures.first.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100
    # a kernel's name links to its code, which opens
    generated = next(i for i, k in enumerate(tiny_report.stages.inductor.outputs[0].kernels) if k.source)
    page.locator("#inductor td.kname a").first.click()
    first = tiny_report.stages.inductor.outputs[0]  # its AOT id counts compiles made earlier in the process
    code = page.locator(f"#out-{htmlparts.slug(first.aot_id)}-k{generated} pre")
    code.wait_for(state="visible", timeout=15000)  # generous: CI machines are small and shared
    assert "kernel" in code.inner_text()
    assert opened.errors == []
    assert opened.requests == [opened.url]
    shot = tmp_path / "report.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("TCINSPECT_SCREENSHOT"):
        # the README's picture: the page as it opens, naming the model as `tcinspect trace` from the repo would
        t = tiny_report.target
        shown = tiny_report.replace(target=dataclasses.replace(t, path=os.path.relpath(t.path, ROOT)))
        docs = Opened(browser, _write(tmp_path, shown, "docs.html"))
        docs.load_ms()
        target = ROOT / os.environ["TCINSPECT_SCREENSHOT"]
        target.parent.mkdir(parents=True, exist_ok=True)
        docs.page.screenshot(path=str(target))


@needs_browser
def test_breaks_page_in_the_browser(browser, breaks_report, tmp_path):
    opened = Opened(browser, _write(tmp_path, breaks_report, "breaks.html"))
    opened.load_ms()
    s = breaks_report.summary
    assert opened.text('#summary [data-key="graph_breaks"] b') == [str(s.graph_breaks)]
    hits = opened.text("#breaks pre.context .hit")
    assert len(hits) == s.distinct_graph_breaks and any("print(" in h for h in hits)
    assert opened.page.locator("#dynamo .breaknote").count() == s.graph_breaks
    if shutil.which("dot"):
        octagons = opened.page.locator(f'#dynamo svg g.node polygon[fill="{picture.BREAK_FILL}"]')
        assert octagons.count() == s.graph_breaks
    assert opened.errors == [] and opened.requests == [opened.url]


def _synthetic(nodes: int) -> Report:
    from builders import synthetic

    return synthetic.build(nodes)


#: The page of a 10,000-node report must be usable at once. The machine is shared and noisy: a load over the
#: limit is repeated, and the best of up to three is compared, each a real navigation of the same 15 MB file. It
#: loads in 0.7-1.8 s on an idle 2-core machine, 3.1-3.5 s there while the suite's other worker compiles.
LARGE_LOAD_LIMIT_MS = 6000


@needs_browser
def test_large_report_loads_fast(browser, tmp_path):
    rep = _synthetic(10_000)
    assert sum(len(g.graph.nodes) for g in rep.stages.dynamo.graphs) == 10_000
    t0 = time.perf_counter()
    path = _write(tmp_path, rep, "large.html")
    written = time.perf_counter() - t0
    opened = Opened(browser, path)
    loads = []
    for _ in range(3):  # a load the machine slowed past the limit is repeated: the page did not change
        loads.append(opened.load_ms())
        if loads[-1] < LARGE_LOAD_LIMIT_MS:
            break
    print(f"\n10,000-node page: {path.stat().st_size / 1e6:.1f} MB written in {written:.2f} s; "
          f"load {', '.join(f'{x:.0f}' for x in loads)} ms")
    assert min(loads) < LARGE_LOAD_LIMIT_MS, loads
    page = opened.page
    # the page is complete, not quick because it is empty
    assert opened.text('#summary [data-key="graphs"] b') == ["10"]
    assert page.locator("#inductor td.kname").count() == rep.summary.kernels == 1000
    table = page.locator("#dynamo details.table").first
    assert table.locator("tbody tr").count() == 0  # collapsed and not yet built
    t0 = time.perf_counter()
    table.locator("> summary").click()
    table.locator("tbody tr").nth(999).wait_for(state="attached", timeout=LARGE_LOAD_LIMIT_MS)
    assert time.perf_counter() - t0 < LARGE_LOAD_LIMIT_MS / 1000
    assert table.locator("tbody tr").count() == 1000
    assert "laid out by tcinspect" in path.read_text()  # 1,000-node graphs: drawn without dot
    # the page itself once per navigation (up to three above), and nothing else
    assert opened.errors == [] and opened.requests == [opened.url] * len(loads)


def test_trace_to_a_file_shows_the_summary_not_every_table(tmp_path, capsys):
    saved = tmp_path / "report.yaml"
    saved.write_text(serialize.dumps(hand_report(), "yaml"))
    page = tmp_path / "report.html"
    code, out, err = cli(capsys, "trace", str(saved), "-o", str(page))
    assert code == 0 and page.read_text().startswith("<!DOCTYPE html>") and f"wrote {page}" in err
    assert "Summary" in out and "cpp_fused_mul_relu_0" not in out  # the kernel table is in the file only
    code, out, _ = cli(capsys, "trace", str(saved), "-o", str(page), "--stage", "inductor")
    assert code == 0 and "cpp_fused_mul_relu_0" in out  # --stage still shows what it names


def test_large_graphs_laid_out_by_a_forked_copy_make_the_same_page(monkeypatch):
    """Graphs past DOT_NODES are laid out by a forked copy of the process while the page is written: the page is
    the one laid out in-process, byte for byte; a copy that fails is replaced by the in-process layout."""
    rep = chain_report(drawing.DOT_NODES + 1200, 2)  # two large graphs: past FORK_NODES together
    monkeypatch.setenv(drawing.NO_FORK_ENV, "1")
    alone = html.render(rep)
    monkeypatch.delenv(drawing.NO_FORK_ENV)
    monkeypatch.setattr(drawing.threading, "active_count", lambda: 1)  # the test runner's threads aside
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(drawing.os, "fork", lambda: forks.append(1) or real_fork())
    assert html.render(rep) == alone and forks == [1]

    def broken(*args, **kwargs):
        raise RuntimeError("the copy fails")

    monkeypatch.setattr(drawing.pickle, "dumps", broken)  # the copy ends with exit 1 and sends nothing
    assert html.render(rep) == alone and forks == [1, 1]
