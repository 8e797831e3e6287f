"""Per-block torch.compile of a tiny Llama's decoder layers (as accelerate's compile_regions does it), run as a
script. With use_cache (REGIONS_USE_CACHE=1) each layer's KV-cache guard fails for the next layer: one
recompile per block; without it the four layers reuse one compile."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regions_common  # noqa: E402

llama = regions_common.llama()
for layer in llama.model.layers:
    layer.compile(backend=regions_common.counting)
with torch.no_grad():
    llama(regions_common.ids(), use_cache=os.environ.get("REGIONS_USE_CACHE") == "1")
