"""The frozen application's entry point: the `gpuwatch` command line."""

import sys

from gpuwatch.cli import main

if __name__ == "__main__":
    sys.exit(main())
