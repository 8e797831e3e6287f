"""How a Report shows itself (``_repr_html_``, ``show``, ``save``). The data model sits at the bottom of the layers and
renders nothing itself, so the views are installed from above: tcinspect's public API (``tcinspect/__init__.py``,
which Python runs before any module of the package) installs ``tcinspect.notebook``. No imports."""

from __future__ import annotations

from typing import Any, Protocol


class Views(Protocol):
    """What a Report's methods hand it to (tcinspect.notebook)."""

    def html(self, rep: Any) -> str: ...

    def show(self, rep: Any, stages: Any) -> None: ...

    def save(self, rep: Any, path: Any) -> Any: ...


_installed: list[Views] = []


def install(views: Views) -> None:
    _installed[:] = [views]


def views() -> Views:
    """The installed views (tcinspect/__init__.py installs them on import)."""
    return _installed[0]
