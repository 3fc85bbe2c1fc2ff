"""Small process helpers shared by the lab lock (controller) and the start barrier (guest)."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine. A zombie counts as ended: its parent (e.g.
    Ansible's async wrapper) has not reaped it yet, but it will do nothing more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
