"""The per-rank entry torchrun launches: ``python -m tcinspect.capturing.rank``.

Each rank captures the model file (or script) in-process, as ``tcinspect trace`` does, and leaves
its files where ``$TCINSPECT_RANKS_DIR`` says (``tcinspect.capturing.launcher.RankFiles``). Everything it
could lose in a crash is written as it happens: its pid first (so a hung job can be killed), its
output, each structured-trace event, and faulthandler's stack on a fatal signal or on torchrun's
SIGTERM; its report (or its error) comes last. It exits 1 when the capture did not work, so that
torchrun stops the other ranks instead of leaving them waiting in a collective.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO

from tcinspect import collector, errors, serialize
from tcinspect.capturing.launcher import RANKS_DIR_ENV, REQUEST, SOURCE, RankFiles
from tcinspect.report import Request

_KEEP_OPEN: list[TextIO] = []  # faulthandler writes to these until the process ends


def main() -> int:
    directory = Path(os.environ[RANKS_DIR_ENV])
    files = RankFiles(directory, int(os.environ.get("RANK", "0")))
    files.pid.write_text(str(os.getpid()), encoding="utf-8")
    _redirect_output(files.log)
    fault = open(files.fault, "w", encoding="utf-8")  # noqa: SIM115 - open until the process ends (_KEEP_OPEN)
    stopped = open(files.stopped, "w", encoding="utf-8")  # noqa: SIM115 - the same
    _KEEP_OPEN.extend((fault, stopped))
    faulthandler.enable(fault, all_threads=True)
    # chain=True: after the dump, SIGTERM still ends the rank as torchrun expects
    faulthandler.register(signal.SIGTERM, stopped, all_threads=True, chain=True)

    from tcinspect.capturing.engine import capture_file
    from tcinspect.capturing.recorder import EVENTS_FILE_ENV

    os.environ[EVENTS_FILE_ENV] = str(files.events)
    code = 1
    try:
        from tcinspect.capturing import modelfile

        request = Request.from_json((directory / REQUEST).read_text(encoding="utf-8"))
        assert request.file is not None
        source = modelfile.of_bytes(Path(request.file), (directory / SOURCE).read_bytes(), request.model,
                                    request.as_script)
        _use_own_gpu(request.compile.device or source.device)
        rep = capture_file(request, source=source)
        payload: dict[str, Any] = {"report": serialize.to_dict(rep)}
        code = 0 if rep.ok else 1
    except errors.TcinspectError as exc:
        payload = {"error": {"class": type(exc).__name__, "cause": exc.cause, "fix": exc.fix}}
    except Exception:  # noqa: BLE001 - a bug in tcinspect: the parent shows it as one
        payload = {"internal": traceback.format_exc()}
    sys.stdout.flush()
    serialize.write_atomic(files.result, json.dumps(payload))
    if code == 0:
        _destroy_process_group()
    return code


def _redirect_output(log: Path) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so C++ output too) to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _use_own_gpu(device: str) -> None:
    """On a CUDA model file, make "cuda" mean this rank's GPU (torchrun's LOCAL_RANK), not GPU 0 for all."""
    local = os.environ.get("LOCAL_RANK")
    if not device.startswith("cuda") or local is None or ":" in device:
        return
    import torch

    if torch.cuda.is_available() and int(local) < torch.cuda.device_count():
        torch.cuda.set_device(int(local))


def _destroy_process_group() -> None:
    """Shut down the process group the model file started (torch warns at exit otherwise)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    status = main()
    collector.finish_before_exit()  # the rank's files are written: its exit, less the collector's walk of the heap
    sys.exit(status)
