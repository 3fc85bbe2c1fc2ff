# STAND-IN helper (miglab tests, miglab/sim/standins/grid-driver): how the GRID driver stand-ins
# ask the stand-in VM kernel (miglab/sim/standins/vgpu-vm) what is loaded, and load or unload the
# nvidia module through its modprobe. Without that kernel stand-in (a guest that does not model
# its kernel), `present()` is false and the driver stand-ins behave as if the module always
# loaded.
import json
import os
import subprocess

KERNEL = "/usr/lib/miglab-standin/vm-kernel"
TOOLS = "/usr/local/sbin"


def present():
    return os.path.exists(KERNEL)


def status():
    """{"loaded": {module: version}, "holders": [[pid, comm]], ...} or None without the model."""
    if not present():
        return None
    out = subprocess.run([KERNEL, "status"], capture_output=True, text=True, check=False).stdout
    try:
        return json.loads(out)
    except ValueError:
        return None


def modprobe(*args):
    """(rc, stderr) of the stand-in kernel's modprobe."""
    r = subprocess.run(
        [os.path.join(TOOLS, "modprobe"), *args], capture_output=True, text=True, check=False
    )
    return r.returncode, r.stderr.strip()


def open_control_device():
    """Load the module as nvidia-modprobe does on first use and hold /dev/nvidiactl open, as a
    process using NVML or CUDA does. Returns the open file, None when the module cannot load,
    or False without the kernel model (nothing to hold)."""
    if not present():
        return False
    rc, _ = modprobe("nvidia")
    if rc != 0:
        return None
    try:
        return open("/dev/nvidiactl", "rb")  # noqa: SIM115 - held for the process's life
    except OSError:
        return None
