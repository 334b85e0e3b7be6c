"""Run a step: `python -m common.run <step>` (see common/run/__init__.py)."""

import sys

from common.run import main

sys.exit(main())
