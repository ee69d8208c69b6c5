"""`python -m gpuwatch` runs the command line."""

import sys

from gpuwatch.cli import main

sys.exit(main())
