"""Rich's table, laid out fast where its cells are plain one-line text. Pure: never prints, never imports torch.

A ``trace`` of a large report prints about 8,000 cells; Rich wraps each cell in a ``Padding``, measures it, wraps it
as a ``Text`` and crops its lines, which was most of the command's time. Almost every cell is a short string that
fits its column. :class:`Table` is Rich's ``Table`` (same constructor, ``add_column``, ``add_row``, captions) with its
own ``__rich_console__``: the column widths come out of the same arithmetic as Rich's (each cell's minimum and
maximum width with its padding, the widest wrappable columns narrowed first, then all evenly); a string that fits
its column becomes one segment, and one too wide is divided at Rich's own word breaks and cut as its column says.
Every other cell (a ``Text`` with styles, a string with markup, control or zero-width characters, any other
renderable) is rendered by Rich itself, and a table with a setting this layout does not know (expanding, fixed
widths, footers, row styles, vertical padding) is Rich's own from the start. Where nothing is styled (no colour
system: a file, a pipe) each line is one segment. ``tests/test_grid.py`` compares the two layouts, character for
character and style for style, on every table the commands print from recorded runs and on random tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from typing import Optional

from rich.cells import cell_len, get_character_cell_size, set_cell_size
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.table import Table as RichTable
from rich.text import Text

_divide_line: Optional[Callable[..., list[int]]]
try:  # Rich's own word breaks (the function Text.wrap calls); without it, Text.wrap itself
    from rich._wrap import divide_line as _divide_line
except ImportError:  # pragma: no cover - every Rich from 10 to 15 has it
    _divide_line = None

__all__ = ["Table"]

#: The column justifications the fast layout follows ("full" makes the table Rich's own).
_JUSTIFY = ("left", "default", "right", "center")


class Table(RichTable):
    """``rich.table.Table`` with a fast layout for plain one-line cells (see the module's docstring)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self._fast_layout_applies(console, options):
            yield from super().__rich_console__(console, options)
            return
        yield from _Layout(self, console, options).render()

    def _fast_layout_applies(self, console: Console, options: ConsoleOptions) -> bool:
        top, _, bottom, _ = self.padding
        return bool(
            self.columns and self.width is None and not self.expand and self.min_width is None
            and not self.show_footer and not self.row_styles and not self.leading
            and not self.highlight and not top and not bottom
            and not any(r.style for r in self.rows)
            and all(c.width is None and not c.ratio and not c.highlight and c.justify in _JUSTIFY
                    for c in self.columns))


def _as_written(console: Console, options: ConsoleOptions) -> tuple[bool, bool]:
    """Whether a string cell is printed as written: no markup, no highlighting; and no emoji codes either, or only
    where it has a colon (``:zap:``)."""
    plain = getattr(console, "_markup", True) is False and not options.markup and not options.highlight
    return plain, getattr(console, "_emoji", True) is not False


def _no_zero_width(text: str) -> bool:
    """Whether every character takes a cell or two (a combining accent, a variation selector takes none: Rich's cropping
    drops such a character where this layout would keep it, so a cell with one is Rich's own)."""
    return all(get_character_cell_size(ch) > 0 for ch in text)


def _clamped(low: int, high: int, limit: int) -> tuple[int, int]:
    """A measurement normalised (0 <= low <= high) and capped at ``limit``, as Rich's Measurement does."""
    low = max(0, min(max(0, low), high))
    high = max(0, max(low, high))
    return min(low, limit), min(high, limit)


class _Layout:
    """One rendering of one table: its cells, their widths, their lines."""

    def __init__(self, table: Table, console: Console, options: ConsoleOptions) -> None:
        self.table, self.console, self.options = table, console, options
        plain, emoji = _as_written(console, options)
        get_style = console.get_style
        n = len(table.columns)
        _, right, _, left = table.padding
        # each column: its cells (header first), their styles, their (left, right) padding, their plain text
        self.cells: list[list[object]] = []
        self.styles: list[list[Style]] = []
        self.pads: list[tuple[int, int]] = []
        self.texts: list[list[Optional[str]]] = []
        self.clamp_pads: list[int] = []
        for i, column in enumerate(table.columns):
            cells: list[object] = list(column.cells)
            styles = [get_style(column.style or "")] * len(cells)
            if table.show_header:
                cells.insert(0, column.header)
                styles.insert(0, get_style(table.header_style or "") + get_style(column.header_style))
            # a collapsed padding: a column's left padding less what the column before it has on its right
            pad_left = 0 if not table.pad_edge and i == 0 else max(0, left - right) if table.collapse_padding and i \
                else left
            pad_right = 0 if not table.pad_edge and i == n - 1 else right
            # what a column's minimum and maximum width are clamped with: Rich's own rule (13 and 15 differ on
            # collapsed padding and on the edges where pad_edge is off)
            own_rule = getattr(table, "_get_padding_width", None)
            self.clamp_pads.append(own_rule(i) if own_rule is not None else
                                   (0 if table.collapse_padding or (not table.pad_edge and i == 0) else left)
                                   + pad_right)
            self.cells.append(cells)
            self.styles.append(styles)
            self.pads.append((pad_left, pad_right))
            # a string cell printed as written: printable and on one line (Rich would strip control codes)
            self.texts.append([c if type(c) is str and plain and c.isprintable() and not (emoji and ":" in c)
                               and (c.isascii() or _no_zero_width(c)) else None for c in cells])
        self._sizes: dict[tuple[int, int], tuple[int, int]] = {}
        #: the columns of the row being rendered whose cell Rich rendered
        self.by_rich: set[int] = set()

    # -- widths --------------------------------------------------------------------------------------------------

    def _cell_range(self, col: int, row: int, limit: int) -> tuple[int, int]:
        """The cell's (minimum, maximum) width with its padding, at most ``limit``: Rich's Measurement of its
        Padding."""
        text = self.texts[col][row]
        left, right = self.pads[col]
        if text is None:
            padded = Padding(self.cells[col][row], (0, right, 0, left))  # type: ignore[arg-type]
            low, high = Measurement.get(self.console, self.options.update_width(limit), padded)
            return low, high
        extra = left + right
        if limit - extra < 1:
            low, high = limit, limit
        else:
            size = self._sizes.get((col, row))
            if size is None:
                words = text.split()
                size = (max(map(cell_len, words)) if words else cell_len(text), cell_len(text))
                self._sizes[(col, row)] = size
            low, high = _clamped(size[0], size[1], limit)
            if high < 1:
                low = high = 0
            low, high = min(low + extra, limit), min(high + extra, limit)
        low, high = _clamped(low, high, limit)
        return (0, 0) if high < 1 else _clamped(low, high, limit)

    def _column_range(self, col: int, limit: int) -> tuple[int, int]:
        if limit < 1:
            return 0, 0
        column = self.table.columns[col]
        ranges = [self._cell_range(col, row, limit) for row in range(len(self.cells[col]))]
        low = max((r[0] for r in ranges), default=1)
        high = max((r[1] for r in ranges), default=limit)
        low, high = min(low, limit), min(high, limit)
        pad = self.clamp_pads[col]
        if column.min_width is not None:
            low, high = max(low, column.min_width + pad), max(high, column.min_width + pad)
        if column.max_width is not None:
            low, high = min(low, column.max_width + pad), min(high, column.max_width + pad)
        return low, high

    def widths(self, limit: int) -> list[int]:
        """Each column's width with its padding, the borders not counted, in ``limit`` columns."""
        n = len(self.table.columns)
        widths = [self._column_range(i, limit)[1] or 1 for i in range(n)]
        if sum(widths) <= limit:
            return widths
        wrappable = [not c.no_wrap for c in self.table.columns]
        widths = _narrowed(widths, wrappable, limit)
        if sum(widths) > limit:
            widths = _reduced(sum(widths) - limit, [1] * n, widths, widths)
        return [self._column_range(i, w)[1] or 0 for i, w in enumerate(widths)]

    # -- lines ---------------------------------------------------------------------------------------------------

    def render(self) -> RenderResult:
        table = self.table
        box_extra = (2 if table.box and table.show_edge else 0) + (len(table.columns) - 1 if table.box else 0)
        widths = self.widths(self.options.max_width - box_extra)
        options = self.options.update(width=sum(widths) + box_extra, highlight=table.highlight, height=None)
        if table.title:
            yield from self._annotation(table.title, table.title_style, "table.title", table.title_justify, options)
        body = self._body(widths, options)
        # where no style is written (no colour system: a file, a pipe) and none is recorded, one segment a line: the
        # same text, without the console passing and cropping each cell's segment (a table wider than the console,
        # which crops its lines, keeps its segments: Rich crops a line cut into segments differently)
        flat = self.console.color_system is None and not self.console.record and \
            sum(widths) + box_extra <= self.options.max_width
        yield from (_lines_of(body) if flat else body)
        if table.caption:
            yield from self._annotation(table.caption, table.caption_style, "table.caption", table.caption_justify,
                                        options)

    def _annotation(self, text: object, style: object, default: str, justify: object,
                    options: ConsoleOptions) -> RenderResult:
        chosen = Style.pick_first(style, default)  # type: ignore[arg-type]
        renderable = self.console.render_str(text, style=chosen, highlight=False) if isinstance(text, str) else text
        return self.console.render(renderable, options.update(justify=justify))  # type: ignore[arg-type]

    def _cell_lines(self, col: int, row: int, width: int, options: ConsoleOptions) -> list[list[Segment]]:
        style = self.styles[col][row]
        text = self.texts[col][row]
        left, right = self.pads[col]
        inner = width - left - right
        if text is not None and inner >= 1:
            justify = self.table.columns[col].justify
            if justify in ("right", "center"):
                text = text.rstrip()
            size = cell_len(text)
            if size <= inner:
                space = inner - size
                before = space if justify == "right" else space // 2 if justify == "center" else 0
                return [[Segment(f"{' ' * (left + before)}{text}{' ' * (space - before + right)}", style)]]
            wrapped = self._wrapped(col, row, inner)
            if wrapped is not None:
                return [[Segment(f"{' ' * left}{line}{' ' * right}", style)] for line in wrapped]
        padded = Padding(self.cells[col][row], (0, right, 0, left))  # type: ignore[arg-type]
        self.by_rich.add(col)
        return self.console.render_lines(padded, options, style=style)

    def _wrapped(self, col: int, row: int, inner: int) -> Optional[list[str]]:
        """A string cell too wide for its column, wrapped as Rich's ``Text.wrap`` wraps it (Rich's own division into
        words, folded or cut as the column says), each line ``inner`` cells wide; None where a line comes out wider
        (Rich's own rendering then crops it)."""
        column = self.table.columns[col]
        text = self.texts[col][row] or ""
        overflow = column.overflow or "fold"
        if _divide_line is None or column.no_wrap or overflow == "ignore":  # not divided: as Rich's version does it
            lines = [line.plain for line in Text(text).wrap(self.console, inner, justify=column.justify,
                                                            overflow=overflow, no_wrap=column.no_wrap)]
        else:
            lines = _wrap(text, inner, column.justify or "default", overflow)
        out = []
        for plain in lines:
            size = cell_len(plain)
            if size > inner:
                return None
            out.append(plain + " " * (inner - size))
        return out

    def _vertical(self, col: int, row: int) -> str:
        """Where a cell sits in a taller row: a header at the bottom, else as its renderable or its column says."""
        if row == 0 and self.table.show_header:
            return "bottom"
        return getattr(self.cells[col][row], "vertical", None) or self.table.columns[col].vertical

    def _body(self, widths: Sequence[int], options: ConsoleOptions) -> Iterator[Segment]:
        table, console = self.table, self.console
        columns = table.columns
        column_options = [options.update(width=w, justify=c.justify, no_wrap=c.no_wrap, overflow=c.overflow,
                                         height=None, highlight=c.highlight) for w, c in zip(widths, columns)]
        box = table.box.substitute(options, safe=console.safe_box if table.safe_box is None else table.safe_box) \
            if table.box else None
        if box is not None and not table.show_header:
            box = box.get_plain_headed_box()
        border = console.get_style(table.style or "") + console.get_style(table.border_style or "")
        edge = table.show_edge
        new_line = Segment.line()
        if box is not None and edge:
            yield Segment(box.get_top(widths), border)
            yield new_line
        n_rows = len(self.cells[0])
        for row in range(n_rows):
            first, last = row == 0, row == n_rows - 1
            header = first and table.show_header
            self.by_rich = set()
            cells = [self._cell_lines(col, row, widths[col], column_options[col]) for col in range(len(columns))]
            tallest = max(len(c) for c in cells)
            height = max(1, tallest)  # a row of cells that rendered to nothing (no width) is one blank line
            for col, lines in enumerate(cells):
                if len(lines) < tallest:
                    lines = _aligned(lines, widths[col], tallest, self.styles[col][row], self._vertical(col, row))
                if col in self.by_rich or len(lines) < height:  # Rich's lines cut or padded to the column's width
                    lines = Segment.set_shape(lines, widths[col], height)
                cells[col] = lines
            if box is not None:
                if first:
                    left, right, divider = box.head_left, box.head_right, box.head_vertical
                elif last:
                    left, right, divider = box.foot_left, box.foot_right, box.foot_vertical
                else:
                    left, right, divider = box.mid_left, box.mid_right, box.mid_vertical
                left_s, right_s, divider_s = Segment(left, border), Segment(right, border), Segment(divider, border)
                for line in range(height):
                    if edge:
                        yield left_s
                    for col, lines in enumerate(cells):
                        if col:
                            yield divider_s
                        yield from lines[line]
                    if edge:
                        yield right_s
                    yield new_line
                if header:
                    yield Segment(box.get_row(widths, "head", edge=edge), border)
                    yield new_line
                end_section = not header and table.rows[row - table.show_header].end_section
                if (table.show_lines or end_section) and not last and not header:
                    yield Segment(box.get_row(widths, "row", edge=edge), border)
                    yield new_line
            else:
                for line in range(height):
                    for lines in cells:
                        yield from lines[line]
                    yield new_line
        if box is not None and edge:
            yield Segment(box.get_bottom(widths), border)
            yield new_line


def _truncated(plain: str, width: int, overflow: str, pad: bool = False) -> str:
    """A line cut to ``width`` cells (with an ellipsis where the column says so), and padded out to it if ``pad``: as
    Rich's ``Text.truncate``."""
    if overflow == "ignore":
        return plain
    size = cell_len(plain)
    if size > width:
        plain = set_cell_size(plain, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(plain, width)
    if pad and size < width:
        plain += " " * (width - size)
    return plain


def _wrap(text: str, width: int, justify: str, overflow: str) -> list[str]:
    """A one-line plain string in lines of ``width`` cells, as Rich's ``Text.wrap`` makes them: divided at Rich's
    word breaks, each line's trailing space past the width dropped, then justified and cut (``overflow`` "fold",
    "ellipsis" or "crop": a cell that is not divided, no_wrap or "ignore", is wrapped by Rich itself, whose versions
    differ there)."""
    assert _divide_line is not None
    bounds = [0, *_divide_line(text, width, fold=overflow == "fold"), len(text)]
    pieces = [text[a:b] for a, b in pairwise(bounds)]
    lines = []
    for piece in pieces:
        excess = len(piece) - width
        if excess > 0:
            trailing = len(piece) - len(piece.rstrip())
            if trailing:
                piece = piece[:len(piece) - min(trailing, excess)]
        if justify == "left":
            piece = _truncated(piece, width, overflow, pad=True)
        elif justify in ("right", "center"):
            piece = _truncated(piece.rstrip(), width, overflow)
            space = width - cell_len(piece)
            piece = " " * (space if justify == "right" else space // 2) + piece
            if justify == "center":
                piece += " " * (width - cell_len(piece))
        lines.append(_truncated(piece, width, overflow))
    return lines


def _lines_of(segments: Iterator[Segment]) -> Iterator[Segment]:
    """The segments' text, unstyled, one segment a line and one for each line's end."""
    parts: list[str] = []
    for seg in segments:
        if seg.control or seg.text == "\n":
            if parts:
                yield Segment("".join(parts))
                parts = []
            yield seg
        else:
            parts.append(seg.text)
    if parts:
        yield Segment("".join(parts))


def _aligned(lines: list[list[Segment]], width: int, height: int, style: Style, vertical: str) -> list[list[Segment]]:
    """A cell's lines made ``height`` tall with blank lines in its style: below them ("top"), above them ("bottom"),
    or half above ("middle", the odd one below)."""
    extra = height - len(lines)
    above = extra if vertical == "bottom" else extra // 2 if vertical == "middle" else 0
    blank = [Segment(" " * width, style)]
    return [blank] * above + lines + [blank] * (extra - above)


def _reduced(total: int, ratios: Sequence[int], most: Sequence[int], values: Sequence[int]) -> list[int]:
    """``values`` less ``total`` in all, shared by ``ratios`` and each share at most ``most`` (rounded as Rich does:
    Python's round, each share from what is left)."""
    ratios = [r if m else 0 for r, m in zip(ratios, most)]
    left, weight = total, sum(ratios)
    if not weight:
        return list(values)
    out = []
    for ratio, cap, value in zip(ratios, most, values):
        if ratio and weight > 0:
            share = min(cap, round(ratio * left / weight))
            out.append(value - share)
            left -= share
            weight -= ratio
        else:
            out.append(value)
    return out


def _narrowed(widths: list[int], wrappable: Sequence[bool], limit: int) -> list[int]:
    """The widest wrappable columns narrowed, down to the next widest at a time, until the total fits ``limit`` (or
    no wrappable column can give more)."""
    total = sum(widths)
    excess = total - limit
    if not any(wrappable):
        return widths
    while total and excess > 0:
        widest = max(w for w, ok in zip(widths, wrappable) if ok)
        runner_up = max(w if ok and w != widest else 0 for w, ok in zip(widths, wrappable))
        gap = widest - runner_up
        ratios = [1 if ok and w == widest else 0 for w, ok in zip(widths, wrappable)]
        if not any(ratios) or not gap:
            break
        widths = _reduced(excess, ratios, [min(excess, gap)] * len(widths), widths)
        total = sum(widths)
        excess = total - limit
    return widths
