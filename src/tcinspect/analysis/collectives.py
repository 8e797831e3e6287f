"""The collectives each compiled graph runs, in order (see ``derived.collectives``, where ranks' reports are
compared as they are merged)."""

from tcinspect.derived.collectives import Collective, kind_of, of_stages

__all__ = ["Collective", "kind_of", "of_stages"]
