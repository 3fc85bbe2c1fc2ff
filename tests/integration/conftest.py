"""Integration fixtures: miglab's vSphere simulator (miglab/sim/vcsim, see its README.md).

- ``vcsim``: one simulator for the whole session, holding the built-in simulated lab
  (inventories/sim). Shared: tests that change the lab (graphics config, reboots, maintenance
  mode) should use a simulator of their own.
- ``vcsim_factory``: ``vcsim_factory(lab=None, **kwargs)`` starts another simulator (arguments as
  ``vcsim_lab.Vcsim``: ``delays``, ``reboot_seconds``, ...), stopped when the test ends. Build a
  lab with ``vcsim_lab.lab_json(lab, catalog, host_extra={"*": {...}})`` or edit ``default_lab()``.

The binary (``vcsim_binary``, tests/conftest.py) is built once per session by
miglab/sim/vcsim/build.sh (seconds when up to date); the tests are skipped only when Go cannot be
installed here (no root, apt-get or package mirror).
"""

from __future__ import annotations

import pytest

from miglab.sim import vcenter as vcsim_lab


@pytest.fixture(scope="session")
def vcsim(vcsim_binary):
    # Hosts in Shared Direct: only then does a host offer vGPU types (real-lab notes V9).
    with vcsim_lab.Vcsim(binary=vcsim_binary, graphics_type="sharedDirect") as sim:
        yield sim


@pytest.fixture
def vcsim_factory(vcsim_binary):
    started: list[vcsim_lab.Vcsim] = []

    def make(lab: dict | None = None, **kwargs) -> vcsim_lab.Vcsim:
        sim = vcsim_lab.Vcsim(lab, binary=vcsim_binary, **kwargs)
        started.append(sim)
        return sim.start()

    yield make
    for sim in started:
        sim.stop()
