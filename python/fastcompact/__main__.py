"""``python -m fastcompact``: the command line, where no ``fastcompact`` script is on PATH."""

from fastcompact.app.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
