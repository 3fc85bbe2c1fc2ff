"""Filters miglab.lab.mlperf_container_* / mlperf_runtime_*: how the mlperf role runs miglab's
guest code -- in a container of the campaign's image (``mlperf_runtime: container``, the default,
as NVIDIA's harness runs its own) or from a virtualenv in the guest (``venv``).

The container: one per guest and wave, ``docker run -d`` of the image with a keeper process
(``sleep infinity`` under Docker's init, which reaps the session's processes); the session and
the barrier commands run in it with ``docker exec``, so they share its PID namespace (the barrier
checks the session's pid). The guest's results folder is mounted at the same path (the
controller fetches the runs' tarballs from the guest), the miglab code (the role's wheel, unpacked
in the guest) read-only with PYTHONPATH -- an image needs only the runtime (Python, LoadGen,
numpy, torch...), and a new miglab commit needs no new image. Host network (the clock responder
is UDP to the controller) and host IPC (PyTorch's shared memory), as NVIDIA's harness runs.
"""

from __future__ import annotations

import posixpath

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain

RUNTIMES = ("container", "venv")
CODE_MOUNT = "/opt/miglab-code"  # where the unpacked wheel is mounted inside the container
LABEL = "miglab.mlperf.session"  # the containers' label: the wave's session id
KEEPER = ["sleep", "infinity"]  # the container's foreground process; the session is exec'ed


def _runtime(runtime) -> str:
    runtime = str(plain(runtime))
    if runtime not in RUNTIMES:
        raise AnsibleFilterError(
            f"mlperf_runtime must be one of {', '.join(RUNTIMES)}: {runtime!r}"
        )
    return runtime


def mlperf_runtime_python(runtime, *, venv="", container="", python="python3"):
    """The command that starts guest-side Python: the virtualenv's interpreter, or
    ``docker exec CONTAINER PYTHON`` (a list, to prefix ``-m miglab...``)."""
    if _runtime(runtime) == "venv":
        return [posixpath.join(str(venv), "bin", "python")]
    if not container:
        raise AnsibleFilterError(
            "mlperf_runtime_python: container runtime without a container name"
        )
    return ["docker", "exec", str(container), str(python)]


def _guest_paths(values) -> list[str]:
    """The absolute guest paths among ``values`` (strings, lists, dicts' values), in order, once."""
    out: list[str] = []

    def add(v):
        if isinstance(v, dict):
            for x in v.values():
                add(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                add(x)
        elif isinstance(v, str) and v.startswith("/"):
            p = posixpath.normpath(v)
            if p not in out:
                out.append(p)

    add(plain(values))
    return out


def mlperf_container_run(
    image,
    name,
    *,
    session="",
    results_dir,
    code_dir,
    run_args=None,
    mounts=None,
    image_id="",
    env=None,
):
    """``docker run -d ...`` of the wave's runtime container (an argv list).

    ``results_dir`` and ``code_dir`` are guest folders (mounted read-write at the same path, and
    read-only at CODE_MOUNT); ``run_args`` the user's Docker options (``--gpus all``,
    ``--runtime=nvidia``, ...); ``mounts`` guest files or folders the runs read (weights, models,
    LoadGen confs: any absolute path among them, in strings, lists or dicts' values), mounted
    read-only at the same path with ``--mount``, which fails for one that does not exist rather
    than creating an empty folder; ``env`` more variables. The run records ``image``,
    ``image_id`` and the runtime in each ``miglab_run.json`` (MIGLAB_MLPERF_* variables)."""
    image, name = str(plain(image)), str(plain(name))
    if not image or not name:
        raise AnsibleFilterError("mlperf_container_run: an image and a container name are needed")
    results_dir = posixpath.normpath(str(results_dir))
    code_dir = str(code_dir)
    if not results_dir.startswith("/") or not code_dir.startswith("/"):
        raise AnsibleFilterError("mlperf_container_run: results_dir and code_dir must be absolute")
    args = plain(run_args) or []
    if isinstance(args, str) or not all(isinstance(a, (str, int, float)) for a in args):
        raise AnsibleFilterError("mlperf_docker_run_args must be a list of strings")
    argv = ["docker", "run", "--detach", "--init", "--name", name]
    argv += ["--label", f"{LABEL}={session or name}"]
    argv += ["--network", "host", "--ipc", "host"]
    argv += [str(a) for a in args]
    argv += ["--volume", f"{results_dir}:{results_dir}"]
    argv += ["--volume", f"{code_dir}:{CODE_MOUNT}:ro"]
    for path in _guest_paths(mounts or []):
        if path == results_dir or path.startswith(results_dir + "/"):
            continue  # in the results folder's mount already
        argv += ["--mount", f"type=bind,source={path},target={path},readonly"]
    variables = {
        "PYTHONPATH": CODE_MOUNT,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MIGLAB_MLPERF_RUNTIME": "container",
        "MIGLAB_MLPERF_IMAGE": image,
        "MIGLAB_MLPERF_IMAGE_ID": str(plain(image_id) or ""),
        **{str(k): str(v) for k, v in (plain(env) or {}).items()},
    }
    for key, value in variables.items():
        argv += ["--env", f"{key}={value}"]
    return argv + [image, *KEEPER]


class FilterModule:
    def filters(self):
        return {
            "mlperf_runtime_python": mlperf_runtime_python,
            "mlperf_container_run": mlperf_container_run,
        }
