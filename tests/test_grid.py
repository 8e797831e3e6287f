"""tcinspect's tables (render/grid.py) print as Rich's own Table prints them: the same characters in the same styles
at every width, on every table the commands print from recorded runs and on made-up tables of every setting tcinspect
uses and many it does not. Rich's own rendering of the same table object is the oracle."""

from __future__ import annotations

import io
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.table import Table as RichTable
from rich.text import Text

from helpers import DATA, cli
from tcinspect.render import grid
from tcinspect.render.grid import Table

WIDTHS = (12, 80, 200)


class _AsRich:
    """A table rendered by Rich's own Table code."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console, options):
        yield from RichTable.__rich_console__(self.table, console, options)


def _console(width: int, **kw) -> Console:
    settings_ = dict(file=io.StringIO(), width=width, color_system="truecolor", force_terminal=True, highlight=False,
                     markup=False, emoji=False, soft_wrap=False)
    settings_.update(kw)
    return Console(**settings_)


def _canonical(segments) -> list[tuple[str, Style]]:
    """The rendering as runs of text in one style each (how Rich cut its segments does not matter: what each cell of
    the screen shows does)."""
    runs: list[tuple[str, Style]] = []
    for seg in Segment.simplify(segments):
        assert not seg.control
        style = seg.style or Style.null()
        if runs and runs[-1][1] == style:
            runs[-1] = (runs[-1][0] + seg.text, style)
        else:
            runs.append((seg.text, style))
    return runs


def assert_as_rich(table: Table, widths=WIDTHS, printed: bool = False, **console_kw) -> None:
    """The same runs of styled text at each width; ``printed``: the same text printed without colour as well."""
    for width in widths:
        console = _console(width, **console_kw)
        ours = _canonical(console.render(table))
        theirs = _canonical(console.render(_AsRich(table)))
        assert ours == theirs, f"width {width}"
        if not printed:
            continue
        plain = _console(width, color_system=None, force_terminal=False, **console_kw)
        plain.print(table)
        rich_plain = _console(width, color_system=None, force_terminal=False, **console_kw)
        rich_plain.print(_AsRich(table))
        assert plain.file.getvalue() == rich_plain.file.getvalue(), f"width {width}"


# -- every table the commands print from recorded runs ------------------------------------------------------------

LOGS = DATA / "torch_trace"
RUNS = [LOGS / "torch-2.13.0" / name for name in
        ("tiny.log.gz", "graph_breaks.log.gz", "gpt2_train_lengths.log.gz", "regions_blocks_recompiled.log.gz",
         "recompile_scalar.log.gz", "ddp_mlp-nproc2")] + \
       [LOGS / "torch-2.11.0-cuda" / name for name in ("transformer_block.log.gz", "lenet_triton_relu.log.gz")]
COMMANDS = (("trace",), ("guards", "--all"), ("breaks",), ("codegen",), ("compile-time",), ("shapes",), ("memory",))


@pytest.fixture
def printed_tables(monkeypatch, tmp_path):
    """Every table the CLI prints while the fixture is in use, as it was printed."""
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[Table] = []
    own = Table.__rich_console__

    def spy(self, console, options):
        seen.append(self)
        yield from own(self, console, options)

    monkeypatch.setattr(Table, "__rich_console__", spy)
    return seen


@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_table_of_every_command_prints_as_rich_prints_it(run, capsys, printed_tables):
    for command in COMMANDS:
        cli(capsys, command[0], str(run), *command[1:])
    code, _, err = cli(capsys, "diff", str(run), str(run))
    assert code == 0, err
    assert len(printed_tables) >= 5, "the commands printed too few tables to compare"
    seen = set()
    for table in printed_tables:
        if id(table) not in seen:
            seen.add(id(table))
            assert_as_rich(table)


def test_the_fast_layout_is_taken_for_the_commands_tables(capsys, printed_tables, monkeypatch):
    """The tables of a trace are laid out by grid's own code (else the comparisons above compare Rich with itself)."""
    taken = []
    monkeypatch.setattr(grid._Layout, "render", lambda self, _r=grid._Layout.render: (taken.append(1), _r(self))[1])
    cli(capsys, "trace", str(RUNS[0]))
    assert printed_tables and len(taken) == len(printed_tables)


# -- made-up tables ------------------------------------------------------------------------------------------------

def _kitchen_sink(**table_kw) -> Table:
    t = Table(title="a title that is longer than a narrow table", caption="a caption", title_justify="left",
              header_style="bold", **table_kw)
    t.add_column("#", justify="right", style="dim", no_wrap=True)
    t.add_column("folded", overflow="fold", style="cyan")
    t.add_column("right", justify="right")
    t.add_column("centre", justify="center", header_style="red")
    t.add_column("ellipsis", overflow="ellipsis", min_width=4)
    t.add_column("cropped", overflow="crop", max_width=12)
    t.add_column("kept", no_wrap=True, min_width=len("kept"))
    rows = [
        ("1", "aten.convolution_backward.default", "trailing   ", "  mid  ", "a b c d e f g h", "x" * 30, "f32[8, 16]"),
        ("22", "", "", "", "", "", ""),
        ("333", "漢字漢字漢字 wide cells", "😀 emoji", "…clipped…", "y = x[a:b:2]", "tab\there", "two\nlines"),
        ("4", Text("styled ", style="bold") + Text("spans", style="red"), "\x07bell", "★", "[bold]not markup[/]",
         ":zap: code", "   leading"),
        ("5", "averyveryverylongwordthatmustfold" * 2, "r", "c", "word " * 12, "z", "end"),
        ("7", "e\u0301 combining", "\u0301", "ok", "\u200d", "漢字" * 9, "…" * 20),
    ]
    for i, row in enumerate(rows):
        t.add_row(*row, end_section=i == 1)
    t.add_row("6")  # fewer cells than columns
    return t


@pytest.mark.parametrize("table_kw", [
    {}, {"pad_edge": False}, {"box": None, "padding": (0, 2)}, {"box": box.SIMPLE_HEAD, "pad_edge": False},
    {"show_lines": True}, {"show_edge": False}, {"show_header": False}, {"padding": 0}, {"box": box.ASCII},
    {"collapse_padding": True}, {"collapse_padding": True, "padding": (0, 3), "pad_edge": False},
    {"expand": True}, {"width": 50}, {"padding": (1, 1)}, {"row_styles": ["dim", ""]},
], ids=str)
def test_made_up_tables_print_as_rich_prints_them(table_kw):
    assert_as_rich(_kitchen_sink(**table_kw), widths=range(1, 160, 7), printed=True)


def test_markup_and_emoji_consoles_are_rich_own_too():
    """A console that reads markup or emoji codes (a notebook's, a user's) shows the cells as Rich would."""
    for kw in ({"markup": True}, {"emoji": True}, {"highlight": True}):
        assert_as_rich(_kitchen_sink(), widths=(30, 120), printed=True, **kw)


def test_an_ascii_only_terminal_gets_rich_substitute_box():
    assert_as_rich(_kitchen_sink(), widths=(60, 120), legacy_windows=False, safe_box=True)
    table = _kitchen_sink()
    out = _console(120, color_system=None, force_terminal=False)
    out.print(table)
    assert "┏" in out.file.getvalue()


def _found(case: int) -> Table:
    """The tables on which random tables once found the layout and Rich apart (each now mended)."""
    if case == 0:  # a lone combining accent: Rich's cropping drops it
        t = Table(box=None, show_header=False, show_edge=False)
        t.add_column(overflow="fold", no_wrap=True, min_width=1)
        for _ in range(4):
            t.add_column(overflow="fold")
        t.add_row("\u0301", "", "", "", "")
    elif case == 1:  # a no_wrap cell too wide, with a trailing space: Rich 15 keeps it, Rich 13 drops it
        t = Table(show_header=False, show_edge=False, pad_edge=False)
        for _ in range(3):
            t.add_column(overflow="fold")
        t.add_column(overflow="ellipsis", no_wrap=True)
        t.add_row("", "", "", ": ")
    else:  # a table wider than its console, a zero-width character where the console cuts its line
        t = Table(box=None, show_header=False, show_edge=False, pad_edge=False, padding=(0, 2))
        t.add_column(overflow="fold")
        t.add_column(overflow="fold", no_wrap=True, min_width=1)
        t.add_row("", "\u0301")
    return t


@pytest.mark.parametrize(("case", "width"), [(0, 1), (1, 5), (2, 2)])
def test_the_tables_random_tables_found_print_as_rich_prints_them(case, width):
    assert_as_rich(_found(case), widths=(width,), printed=True)


_CELL = st.text(alphabet=string.ascii_letters[:6] + "  _-.,:[]/" + "漢😀…★é\u0301\t\n\x07", max_size=40)


@st.composite
def _tables(draw):
    table = Table(
        title=draw(st.one_of(st.none(), _CELL)), caption=draw(st.one_of(st.none(), _CELL)),
        title_justify=draw(st.sampled_from(["left", "center", "right"])),
        box=draw(st.sampled_from([box.HEAVY_HEAD, box.SIMPLE_HEAD, box.ROUNDED, None])),
        show_header=draw(st.booleans()), show_edge=draw(st.booleans()), pad_edge=draw(st.booleans()),
        show_lines=draw(st.booleans()), collapse_padding=draw(st.booleans()),
        padding=draw(st.sampled_from([(0, 1), (0, 2), (0, 0), (0, 3), (0, 1, 0, 2), (0, 2, 0, 1)])),
        header_style=draw(st.sampled_from(["", "bold", "red on blue"])))
    for _ in range(draw(st.integers(1, 6))):
        table.add_column(draw(_CELL), justify=draw(st.sampled_from(["left", "right", "center", "default"])),
                         overflow=draw(st.sampled_from(["fold", "ellipsis", "crop"])), no_wrap=draw(st.booleans()),
                         style=draw(st.sampled_from(["", "dim", "cyan", "bold red"])),
                         min_width=draw(st.one_of(st.none(), st.integers(0, 12))),
                         max_width=draw(st.one_of(st.none(), st.integers(1, 30))),
                         vertical=draw(st.sampled_from(["top", "middle", "bottom"])))
    for _ in range(draw(st.integers(0, 5))):
        table.add_row(*draw(st.lists(_CELL, min_size=0, max_size=len(table.columns))),
                      end_section=draw(st.booleans()))
    return table


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, database=None)
@given(table=_tables(), width=st.integers(1, 140))
def test_any_table_prints_as_rich_prints_it(table, width):
    assert_as_rich(table, widths=(width,), printed=True)
