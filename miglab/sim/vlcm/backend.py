"""What the simulated vLCM needs from the lab's hosts: the :class:`HostBackend` protocol.

The server (:mod:`miglab.sim.vlcm.server`) reads inventory and installed software through it when it
lists clusters and hosts or scans, and changes hosts through it when it remediates (rolling, one
host at a time). Implementations raise :class:`HostOpError` when an operation on a host fails; any
other exception is a bug of the backend (the server logs its traceback and fails the task with a
short internal-error message)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class HostOpError(RuntimeError):
    """An operation on a host failed; the message is what vCenter would say (it ends up in the
    task's error and in the host's apply status)."""


@runtime_checkable
class HostBackend(Protocol):
    def clusters(self) -> list[dict]:
        """``[{"cluster": "domain-c7", "name": "cluster1", "image_managed": bool,
        "drs_enabled": bool, "ha_enabled": bool}]``"""
        ...

    def hosts(self, cluster: str) -> list[dict]:
        """``[{"host": "host-21", "name": "esxi-01...", "connection_state": "CONNECTED",
        "power_state": "POWERED_ON"}]``"""
        ...

    def base_image(self, host: str) -> dict:
        """``{"version": "8.0.3-0.0.24022510", "display_name": "ESXi", "display_version": "8.0 U3",
        "release_date": "2024-06-25T00:00:00Z"}``"""
        ...

    def installed_components(self, host: str) -> dict[str, dict]:
        """The non-base components: name -> ``{"version", "display_name", "display_version",
        "vendor"}``."""
        ...

    def enter_maintenance(self, host: str) -> None: ...

    def apply_components(self, host: str, components: dict[str, str]) -> None:
        """Make the host's non-base component set exactly ``components`` (name -> path of the
        depot zip that holds the image's version); components not named are removed."""
        ...

    def reboot(self, host: str) -> None:
        """Returns when the host is connected again."""
        ...

    def exit_maintenance(self, host: str) -> None: ...
