"""Shared fixtures: the built-in catalog and the simulated lab."""

from __future__ import annotations

import pytest

from testlib import ROOT


@pytest.fixture(scope="session")
def catalog():
    from miglab.catalog import load_catalog

    return load_catalog()


@pytest.fixture(scope="session")
def sim_lab():
    from miglab.lab import load_lab

    return load_lab(ROOT / "inventories" / "sim")
