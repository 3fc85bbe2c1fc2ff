"""Shared fixtures: the built-in catalog, the simulated lab, the vSphere simulator's binary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testlib import ROOT

SIM_DIR = ROOT / "tests" / "sim"
if str(SIM_DIR) not in sys.path:
    sys.path.insert(0, str(SIM_DIR))


@pytest.fixture(scope="session")
def catalog():
    from miglab.catalog import load_catalog

    return load_catalog()


@pytest.fixture(scope="session")
def sim_lab():
    from miglab.lab import load_lab

    return load_lab(ROOT / "inventories" / "sim")


@pytest.fixture(scope="session")
def vcsim_binary() -> Path:
    """miglab's vSphere simulator, built once per session by scripts/build-vcsim.sh (seconds when
    up to date); skipped only when Go cannot be installed here (no root, apt-get or mirror)."""
    import vcsim_lab

    try:
        return vcsim_lab.build()
    except vcsim_lab.BuildUnavailable as exc:
        if vcsim_lab.BINARY.is_file():
            return vcsim_lab.BINARY
        pytest.skip(f"vSphere simulator unavailable: Go cannot be installed here ({exc})")
