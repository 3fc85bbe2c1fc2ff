"""miglab: rebuild and benchmark MIG/vGPU labs on VMware vSphere."""

__version__ = "0.1.0"
