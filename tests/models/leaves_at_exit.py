"""A model file (or, run as a script, a script) that leaves work for its process's exit: a file written but never
closed, an atexit callback, an object with __del__ in a reference cycle that the callback keeps alive, a thread that
is not a daemon and a thread pool never shut down. Each writes a file into $LEAVES_DIR when it is done."""

import atexit
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch

OUT = os.environ["LEAVES_DIR"]


def _write(name: str, text: str) -> None:
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


class Cycle:
    def __init__(self):
        self.me = self  # freed only by the cycle collector

    def __del__(self):
        _write("del.txt", "collected\n")


kept = Cycle()  # alive through this module's globals, which the atexit callback below holds
left_open = open(os.path.join(OUT, "open.txt"), "w")  # noqa: SIM115 - never closed: flushed when freed
left_open.write("written, never closed\n")
atexit.register(lambda: _write("atexit.txt", f"atexit ran, {type(kept).__name__} still alive\n"))
threading.Thread(target=lambda: (time.sleep(0.5), _write("thread.txt", "thread done\n"))).start()
ThreadPoolExecutor(1).submit(lambda: (time.sleep(0.5), _write("pool.txt", "pool task done\n")))

model = torch.nn.Linear(4, 2)
example_inputs = (torch.randn(3, 4),)

if __name__ == "__main__":
    torch.compile(model, backend="eager")(*example_inputs)
