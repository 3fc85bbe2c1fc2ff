"""Shared fixtures: the built-in catalog, the simulated lab, the vSphere simulator's binary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testlib import ROOT

# The guest modules' shared code is a file of the collection (module_utils), not of the package.
MODULE_UTILS = ROOT / "plugins" / "module_utils"
if str(MODULE_UTILS) not in sys.path:
    sys.path.insert(0, str(MODULE_UTILS))


@pytest.fixture(scope="session")
def catalog():
    from miglab.core.catalog import load_catalog

    return load_catalog()


@pytest.fixture(scope="session")
def sim_lab():
    from miglab.adapters.inventory import load_lab

    return load_lab(ROOT / "inventories" / "sim")


@pytest.fixture(scope="session")
def vcsim_binary() -> Path:
    """miglab's vSphere simulator, built once per session by miglab/sim/vcsim/build.sh (seconds when
    up to date); skipped only when Go cannot be installed here (no root, apt-get or mirror)."""
    from miglab.sim import vcenter as vcsim_lab

    try:
        return vcsim_lab.build()
    except vcsim_lab.BuildUnavailable as exc:
        if vcsim_lab.BINARY.is_file():
            return vcsim_lab.BINARY
        pytest.skip(f"vSphere simulator unavailable: Go cannot be installed here ({exc})")


# Every test carries its tier's marker (`pytest -m unit`, `-m "not e2e"`, ...), from its folder.
TIERS = {"unit": "unit", "integration": "integration", "e2e": "e2e", "bench": "bench"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT / "tests").parts
        tier = TIERS.get(parts[0]) if len(parts) > 1 else None
        if tier and not item.get_closest_marker(tier):
            item.add_marker(getattr(pytest.mark, tier))
