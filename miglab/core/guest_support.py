"""The guest systems miglab supports: exactly those its tests run the guest roles on.

A guest system is supported when the guest roles' molecule scenarios and the simulated lab run on
an image of it; today that is Debian 12 only, in ``localhost/miglab-debian12`` (debootstrapped by
miglab/sim/build-images.sh). Everything that names the supported guests follows this table, and
the unit tests hold it to it:

* the guest roles' ``meta/main.yml`` platforms and their distribution check (the list in each
  role's ``vars/main.yml``): tests/unit/test_guest_support.py;
* the Python the code that runs inside a guest is checked against with vermin:
  tests/unit/test_guest_python.py.

Add a system here only together with a molecule image of it (and its scenarios).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GuestSystem:
    distribution: str  # ansible_facts['distribution']
    major_version: str  # ansible_facts['distribution_major_version']
    codename: str  # its version name in a role's meta/main.yml platforms (Galaxy)
    python: str  # the version of its python3 package: what Ansible and the mlperf venv run on
    image: str  # the container image (no tag) the molecule scenarios and the simulated lab use

    @property
    def label(self) -> str:
        """How the guest roles' distribution check names it, e.g. ``Debian 12``."""
        return f"{self.distribution} {self.major_version}"


# Debian 12 bookworm's python3 is 3.11 (packages.debian.org/bookworm/python3). Not supported, for
# want of a test: Ubuntu 20.04 (Python 3.8), 22.04 (3.10: below the package's requires-python,
# so the mlperf role's venv cannot install miglab there) and 24.04 (3.12).
SUPPORTED_GUESTS: tuple[GuestSystem, ...] = (
    GuestSystem("Debian", "12", "bookworm", "3.11", "localhost/miglab-debian12"),
)

# The guest modules (plugins/modules run on the guest, not through an action plugin) and their
# module_utils run on the guest's python3 under whichever ansible-core drives them; they keep to
# Python 3.8, the oldest target of ansible-core 2.18 and later (2.17, the roles'
# min_ansible_version, still runs modules on 3.7), which is older than every supported guest's.
GUEST_MODULE_PYTHON = "3.8"


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def oldest_guest_python() -> str:
    """The oldest python3 among the supported guests: what the guest-side MLPerf code (run in a
    venv made from the guest's python3) must run on."""
    return min((g.python for g in SUPPORTED_GUESTS), key=version_tuple)
