"""A tiny Llama whose decoder layers are each a nested_compile_region: all four calls reuse one subgraph."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regions_common  # noqa: E402

model = regions_common.nested(regions_common.llama())
example_inputs = (regions_common.ids(),)
