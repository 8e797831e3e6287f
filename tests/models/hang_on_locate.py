"""A custom backend that drops an op, then hangs when it is handed a graph a second time in the same process, as
verify's search for where results first depart does (in the capture's child, after the record). ``--timeout``
ends that search; the capture's record, its verification included, is kept.

    tcinspect verify tests/models/hang_on_locate.py --backend tests/models/hang_on_locate.py:drop_relu --timeout 30
"""
import os
import time

import torch


def drop_relu(gm, example_inputs):
    # the count lives in the process's environment: the search loads this module again, the process stays
    calls = int(os.environ.get("HANG_ON_LOCATE_CALLS", "0")) + 1
    os.environ["HANG_ON_LOCATE_CALLS"] = str(calls)
    if calls > 1:
        time.sleep(3600)
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in (torch.relu, torch.nn.functional.relu):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm.forward


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2 + 1


model = Block()
example_inputs = (torch.randn(8, 16),)
