"""Helpers shared by the tests: repository paths and the CLI runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SEED = ROOT / "campaigns" / "r750xa-a100-80gb-mig.yml"


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the real `miglab` entry point in a subprocess (exit codes and streams as users see)."""
    return subprocess.run(
        [sys.executable, "-m", "miglab.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
