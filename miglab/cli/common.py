"""What the ``miglab`` commands share: consoles, JSON output, warnings."""

from __future__ import annotations

import json
import sys


def _console(stderr: bool = False):
    from rich.console import Console

    width = None if sys.stdout.isatty() else 140
    # no markup: names, paths and values come from input files, and "[/x]" in a host, GPU or
    # file name must print as it is (with markup rich refused it: MarkupError); styles are Text's
    return Console(stderr=stderr, width=width, highlight=False, soft_wrap=False, markup=False)


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _warn(warnings) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def _load(args):
    from miglab.adapters.inventory import load_checked

    return load_checked(args.campaign, args.inventory)
