"""The `neardup` console script: runs the command line binary installed
with the package (neardup/_bin/neardup), the same program as a release
binary."""

from __future__ import annotations

import os
import sys


def binary() -> str:
    """The path of the bundled neardup binary."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "neardup")


def main() -> None:
    path = binary()
    if not os.path.exists(path):
        sys.stderr.write(f"neardup: the command line binary is missing from the package ({path})\n")
        sys.exit(1)
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
