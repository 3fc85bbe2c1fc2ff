"""Filters miglab.lab.*: the guest roles' decisions on the controller (the logic is the guest
modules' shared code, plugins/module_utils/miglab_guest.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.module_utils.miglab_guest import (
    deb_name_version,
    debs_to_install,
)
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain


def deb_packages(debs):
    """A .deb list -> the package names their Debian file names give (for ``dpkg-query -W``)."""
    names = []
    for item in plain(debs or []):
        if not isinstance(item, dict):
            raise AnsibleFilterError("deb_packages: each item must be a dict with src or url")
        nv = deb_name_version(str(item.get("src") or item.get("url") or ""))
        if nv is not None:
            names.append(nv[0])
    return names


def deb_pending(debs, dpkg_query_stdout):
    """The items of a .deb list not installed at their file name's version (install order)."""
    return debs_to_install(plain(debs or []), str(dpkg_query_stdout or ""))


class FilterModule:
    def filters(self):
        return {"deb_packages": deb_packages, "deb_pending": deb_pending}
