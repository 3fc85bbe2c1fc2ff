"""``python -m miglab.cli``: the same as the ``miglab`` command."""

import sys

from miglab.cli.commands import main

sys.exit(main())
