"""``python -m acceptsim``: the command line, as the ``acceptsim`` command."""

import sys

from acceptsim.cli import main

sys.exit(main())
