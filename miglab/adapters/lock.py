"""One campaign run per lab at a time: a lock file holding who runs, with stale-lock recovery.

The lock is a file created with O_EXCL (atomic on local file systems) holding JSON: pid, host,
start time, command. A lock whose process no longer exists on this host is stale and is taken
over; a lock held from another host is never broken automatically.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from miglab.core.process import pid_alive


class LabBusy(RuntimeError):
    """Another run holds the lab; the message says who and since when."""


@dataclass
class LockInfo:
    pid: int
    host: str
    started: float
    command: str
    lab: str

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return f"pid {self.pid} on {self.host} since {when} ({self.command})"


def lock_path(lab_source: str, root: Path) -> Path:
    key = hashlib.sha256(str(Path(lab_source).resolve()).encode()).hexdigest()[:16]
    return root / f"lab-{key}.lock"


def read(path: Path) -> LockInfo | None:
    try:
        data = json.loads(path.read_text())
        return LockInfo(
            int(data["pid"]),
            str(data["host"]),
            float(data["started"]),
            str(data.get("command", "")),
            str(data.get("lab", "")),
        )
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        # Unreadable: a writer died between create and write. Treat as stale.
        return LockInfo(-1, socket.gethostname(), 0.0, "(unreadable lock)", "")


class LabLock:
    """``with LabLock(path, lab, command):`` -- raises LabBusy when the lab is in use.

    Taking and releasing happen under an ``flock`` on a sibling guard file, so the check of a
    holder and the take-over of a stale lock are one step: two runs that find the same dead
    holder cannot both take over, and a lock being written is never read half-written. The lock
    file itself appears whole (written beside it, then hard-linked into place, which fails when
    one exists)."""

    def __init__(self, path: Path, lab: str, command: str):
        self.path = path
        self.lab = lab
        self.command = command
        self.took_over: LockInfo | None = None

    @contextmanager
    def _guarded(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        guard = self.path.with_name(self.path.name + ".guard")
        with open(guard, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _create(self) -> bool:
        """The lock file, whole, or False when one exists."""
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.time(),
            "command": self.command,
            "lab": self.lab,
        }
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(info))
        try:
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def __enter__(self) -> LabLock:
        with self._guarded():
            for _ in range(3):
                if self._create():
                    return self
                holder = read(self.path)
                if holder is None:
                    continue  # released meanwhile (by a holder outside the guard)
                same_host = holder.host == socket.gethostname()
                if same_host and (holder.pid < 0 or not pid_alive(holder.pid)):
                    self.took_over = holder
                    self.path.unlink(missing_ok=True)  # stale: its process is gone
                    continue
                raise LabBusy(
                    f"lab {self.lab} is in use by {holder.describe()}; lock file {self.path}"
                ) from None
        raise LabBusy(f"could not take the lock {self.path}")

    def __exit__(self, *exc) -> None:
        with self._guarded():
            holder = read(self.path)
            if holder and holder.pid == os.getpid():
                self.path.unlink(missing_ok=True)
