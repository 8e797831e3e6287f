"""The torch version a report records (``torch.__version__``, public), read here beside the rest of what tcinspect
asks of torch."""

from __future__ import annotations

import torch


def torch_version() -> str:
    return str(torch.__version__)
