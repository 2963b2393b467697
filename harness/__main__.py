"""Entry point for `python -m harness`."""

import sys

from harness.commands.cli import main

sys.exit(main())
