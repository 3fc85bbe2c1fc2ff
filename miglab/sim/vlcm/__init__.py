"""A simulated vSphere Lifecycle Manager (vLCM) REST endpoint for the simulated vCenter (test
infrastructure, standard library only).

:class:`~miglab.sim.vlcm.server.VlcmServer` serves the part of VMware's vSphere Automation API
(``/api``: ``session``, ``vcenter/cluster``, ``vcenter/host``, ``esx/settings/...``,
``cis/tasks``) that miglab's image-managed cluster roles use, on a loopback port; the vCenter
simulator proxies ``https://<vcenter>/api/`` to it. It drives the lab's hosts through a
:class:`~miglab.sim.vlcm.backend.HostBackend`. What it models and where each behaviour comes from:
``README.md`` next to this file."""

from miglab.sim.vlcm.backend import HostBackend, HostOpError
from miglab.sim.vlcm.server import VlcmServer

__all__ = ["HostBackend", "HostOpError", "VlcmServer"]
