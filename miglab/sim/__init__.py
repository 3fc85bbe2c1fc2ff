"""The built-in simulated lab (``miglab sim``): a vCenter simulator built from Debian's govmomi
with miglab's GPU model (``vcsim/``, Go), ESXi host stand-in containers, guests as systemd
containers made from a golden image the real guest roles configured (``golden.yml``,
``guest/Containerfile``), the guest keeper (:mod:`miglab.sim.daemon`), and the NVIDIA stand-ins
(``standins/``: each says what it stands for and names the source of every output format).

:mod:`miglab.sim.lab` runs it; :mod:`miglab.sim.vcenter` builds and drives the simulator."""
