"""A counter updated in place inside forward: under mode="reduce-overhead" CUDA graph trees skip the forward graph.

    tcinspect trace sample_models/cudagraph_skip.py --mode reduce-overhead --stage summary,cudagraphs

The in-place update of an input (``calls.add_(1)``) is what torch names as the reason; move it out of the
compiled forward (or keep the counter in Python) and the forward is captured too. Needs a CUDA GPU.
"""

import torch


class Counted(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)

    def forward(self, x, calls):
        calls.add_(1)
        return self.lin(x).relu()


device = "cuda" if torch.cuda.is_available() else "cpu"
model = Counted().to(device)
example_inputs = (torch.randn(32, 64, device=device), torch.zeros(1, device=device))
input_sets = [(torch.randn(32, 64, device=device), torch.zeros(1, device=device))]
