"""nanoGPT's training loop in small: the model compiled, AdamW's step compiled too, and a LambdaLR warm-up
schedule that changes the learning rate (a Python float the compiled step reads) every iteration."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nanogpt import GPT  # noqa: E402


def main(steps: int = 3) -> None:
    torch.manual_seed(0)
    net = GPT().train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.1, foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: min(1.0, (it + 1) / 10))
    step_model = torch.compile(net, backend="aot_eager")

    @torch.compile(backend="eager")
    def opt_step() -> None:
        opt.step()

    data = torch.randint(0, 128, (2, 17), generator=torch.Generator().manual_seed(0))
    for _ in range(steps):
        _, loss = step_model(data[:, :-1].contiguous(), data[:, 1:].contiguous())
        loss.backward()
        opt_step()
        opt.zero_grad(set_to_none=True)
        sched.step()


if __name__ == "__main__":
    main()
