"""vSphere adapter (pyVmomi): sessions, property reads, tasks, vGPU VMs and ESXi hosts.

Depends on the core (catalog, placement); the core never imports it.
"""
