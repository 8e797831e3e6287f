"""Report <-> plain data, YAML and JSON: the saved-report format. No torch import.

One idea per module: ``rules`` (what a saved report may lack), ``mapping`` (report -> plain data),
``build`` and ``builders`` (plain data -> report objects: the checked path that names a bad key, and the
generated fast path with the same rules), ``fromdict`` (a report's own consistency), ``yaml_emit`` and
``yaml_read`` (the report's YAML style, written and read directly), ``json_text`` (JSON through orjson,
byte for byte as ``json`` writes it), ``floats`` (the floats that decide between the two), ``text``
(dumps/loads/load), ``schema`` (the report's JSON Schema).
"""

from tcinspect.plaindata import plain
from tcinspect.serialize.fromdict import from_dict
from tcinspect.serialize.mapping import to_dict
from tcinspect.serialize.rules import ADDED_TO_SCHEMA_1, OPTIONAL_SECTIONS, STAGE_STATUSES
from tcinspect.serialize.text import FORMATS, dump_data, dumps, format_for_path, load, loads, write_atomic

__all__ = ["ADDED_TO_SCHEMA_1", "FORMATS", "OPTIONAL_SECTIONS", "STAGE_STATUSES", "dump_data", "dumps",
           "format_for_path", "from_dict", "load", "loads", "plain", "to_dict", "write_atomic"]
