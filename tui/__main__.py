"""``python -m tui RUN_DIR``: the monitor without going through the project CLI."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
