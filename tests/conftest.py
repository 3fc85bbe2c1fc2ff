"""Shared test helpers: paths, the CLI runner and the built-in catalog."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SEED = ROOT / "campaigns" / "r750xa-a100-80gb-mig.yml"


@pytest.fixture(scope="session")
def catalog():
    from miglab.catalog import load_catalog

    return load_catalog()


@pytest.fixture(scope="session")
def sim_lab():
    from miglab.lab import load_lab

    return load_lab(ROOT / "inventories" / "sim")


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the real `miglab` entry point in a subprocess (exit codes and streams as users see)."""
    return subprocess.run(
        [sys.executable, "-m", "miglab.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
