"""`python -m miglab`: the miglab CLI (as the `miglab` command)."""

import sys

from miglab.cli.commands import main

sys.exit(main())
