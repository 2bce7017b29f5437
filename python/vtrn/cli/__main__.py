"""``python -m vtrn.cli ARGS`` is the ``vtrn`` command."""

import sys

from vtrn.cli import main

sys.exit(main())
