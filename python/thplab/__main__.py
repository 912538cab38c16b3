"""`python -m thplab` is the `thplab` command."""

import sys

from thplab.cli import main

sys.exit(main())
