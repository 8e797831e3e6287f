"""``python -m tcinspect`` and the ``tcinspect`` script: a capture's child process is started before the command
line is parsed (capturing/prewarm.py), then the CLI runs."""

import sys


def main() -> None:
    from tcinspect.capturing import prewarm

    prewarm.start(sys.argv[1:])  # before the CLI's own imports: the child imports torch meanwhile
    from tcinspect.cli import run

    run()


if __name__ == "__main__":
    main()
