"""Run a step: `python -m common.run <step>` (see common/run/__init__.py)."""

import gc
import sys

from common.run import main

code = main()
gc.freeze()  # Python's last garbage collection skips frozen objects: torch's take a second
sys.exit(code)
