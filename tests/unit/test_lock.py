"""The lab lock: one run at a time, stale locks of dead processes recovered."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from miglab.adapters.lock import LabBusy, LabLock, lock_path, read


def test_second_holder_is_refused(tmp_path):
    path = lock_path("inventories/sim", tmp_path)
    with LabLock(path, "sim", "miglab run a.yml"):
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path\n"
                "from miglab.adapters.lock import LabLock, LabBusy\n"
                "try:\n    LabLock(Path(sys.argv[1]), 'sim', 'other').__enter__()\n"
                "except LabBusy as e:\n    print(e); sys.exit(3)\n",
                str(path),
            ],
            capture_output=True,
            text=True,
        )
        assert child.returncode == 3
        assert f"pid {os.getpid()}" in child.stdout and "miglab run a.yml" in child.stdout
    assert not path.exists()


def test_stale_lock_of_dead_process_is_taken_over(tmp_path):
    path = lock_path("inventories/sim", tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path.write_text(
        json.dumps(
            {"pid": dead.pid, "host": socket.gethostname(), "started": 0, "command": "crashed run"}
        )
    )
    with LabLock(path, "sim", "new") as lock:
        assert lock.took_over is not None and lock.took_over.pid == dead.pid
        assert read(path).pid == os.getpid()


def test_lock_from_another_host_is_never_broken(tmp_path):
    path = lock_path("inventories/sim", tmp_path)
    path.write_text(
        json.dumps({"pid": 1, "host": "other-controller", "started": 0, "command": "x"})
    )
    with pytest.raises(LabBusy, match="other-controller"):
        LabLock(path, "sim", "new").__enter__()
