"""pytest plugin (registered through the ``pytest11`` entry point): the ``tcinspect_check`` fixture.

    def test_compiles_cleanly(tcinspect_check):
        tcinspect_check(MyModel(), torch.randn(8, 16), max_graph_breaks=0, max_recompiles=0)

Importing this module does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def tcinspect_check() -> Callable[..., Any]:
    """``tcinspect.assertions.assert_compiles``: fails the test with the breaks listed."""
    from tcinspect.assertions import assert_compiles

    def check(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        try:
            return assert_compiles(*args, **kwargs)
        except AssertionError as exc:
            message = str(exc)
        pytest.fail(message, pytrace=False)  # outside the except: no chained second copy

    return check
