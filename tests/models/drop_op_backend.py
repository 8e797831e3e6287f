"""A custom backend that drops an op: ``drop_relu`` removes every ``torch.relu`` from the Dynamo graph it is
handed (its users read the relu's input instead) and runs the edited graph. ``verify`` fails, and locates the
dropped relu.

    tcinspect verify tests/models/drop_op_backend.py --backend tests/models/drop_op_backend.py:drop_relu
"""
import torch


def drop_relu(gm, example_inputs):
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
        h = self.linear(x)
        h = torch.relu(h)  # dropped by drop_relu
        return h * 2 + 1


model = Block()
example_inputs = (torch.randn(8, 16),)
