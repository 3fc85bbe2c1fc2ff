"""``python -m miglab.mlperf.run``: the entry point users know; the code lives in
:mod:`miglab.mlperf.guest.run` (what runs inside a guest)."""

import sys

from miglab.mlperf.guest.run import main

if __name__ == "__main__":
    sys.exit(main())
