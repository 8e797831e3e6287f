"""``python -m tcinspect``."""

from tcinspect.cli import run

run()
