"""Issue 17 item 2: the MLPerf runtime in a container (the mlperf role's mlperf_runtime).

The role's filters (plugins/filter/mlperf_runtime.py: the guest-side Python prefix and the
runtime container's `docker run`), the run record's ``runtime`` (miglab.mlperf.guest.runtime) and
the report's RUNTIME banner, the role's wiring (defaults, argument specs, tasks), the image check
before a wave (the guest filters the role uses), the shipped Dockerfile for real labs (parsed: it
cannot be built here) and the simulated lab's runtime image and guest mount.
"""

from __future__ import annotations

import re
import shlex

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from testlib import ROOT, collection_module

ROLE = ROOT / "roles" / "mlperf"
DOCKERFILE = ROOT / "containers" / "mlperf-runtime" / "Dockerfile"
VGPU_535_Q = ROOT / "tests" / "fixtures" / "nvidia-smi" / "h200-q.txt"


@pytest.fixture(scope="module")
def runtime():
    return collection_module("plugins.filter.mlperf_runtime").FilterModule().filters()


# --- the guest-side Python: virtualenv or docker exec ------------------------------------------


def test_the_python_prefix_of_each_runtime(runtime):
    prefix = runtime["mlperf_runtime_python"]
    assert prefix("venv", venv="/opt/miglab-mlperf", container="c") == [
        "/opt/miglab-mlperf/bin/python"
    ]
    assert prefix("container", venv="/opt/v", container="miglab-mlperf-1", python="python3") == [
        "docker", "exec", "miglab-mlperf-1", "python3",
    ]  # fmt: skip
    with pytest.raises(AnsibleFilterError, match="container, venv"):
        prefix("podman", container="c")
    with pytest.raises(AnsibleFilterError, match="container name"):
        prefix("container", container="")


# --- the runtime container ----------------------------------------------------------------------


def _run(runtime, **kw):
    args = {
        "session": "20261205T010203000000",
        "results_dir": "/var/lib/miglab-mlperf/results",
        "code_dir": "/var/cache/miglab-mlperf/code",
        "run_args": ["--gpus", "all"],
        "image_id": "sha256:" + "ab" * 32,
    }
    args.update(kw)
    return runtime["mlperf_container_run"]("miglab/mlperf-runtime:23.10", "miglab-mlperf-x", **args)


def test_the_container_runs_detached_with_host_network_ipc_and_the_users_gpu_options(runtime):
    argv = _run(runtime)
    assert argv[:3] == ["docker", "run", "--detach"]
    assert "--init" in argv  # reaps the exec'ed session's processes
    assert argv[argv.index("--name") + 1] == "miglab-mlperf-x"
    assert argv[argv.index("--label") + 1] == "miglab.mlperf.session=20261205T010203000000"
    assert argv[argv.index("--network") + 1] == "host"  # the clock responder: UDP to the controller
    assert argv[argv.index("--ipc") + 1] == "host"
    assert argv[argv.index("--gpus") + 1] == "all"
    # the image, then the keeper: the session and the barrier commands are `docker exec`ed
    assert argv[-3:] == ["miglab/mlperf-runtime:23.10", "sleep", "infinity"]


def test_results_at_the_same_path_code_read_only_and_the_runtime_in_the_environment(runtime):
    argv = _run(runtime)
    volumes = [argv[i + 1] for i, a in enumerate(argv) if a == "--volume"]
    assert "/var/lib/miglab-mlperf/results:/var/lib/miglab-mlperf/results" in volumes
    assert "/var/cache/miglab-mlperf/code:/opt/miglab-code:ro" in volumes
    env = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--env")
    assert env["PYTHONPATH"] == "/opt/miglab-code"
    assert env["MIGLAB_MLPERF_RUNTIME"] == "container"
    assert env["MIGLAB_MLPERF_IMAGE"] == "miglab/mlperf-runtime:23.10"
    assert env["MIGLAB_MLPERF_IMAGE_ID"] == "sha256:" + "ab" * 32


def test_guest_paths_the_runs_read_are_mounted_read_only_once(runtime):
    argv = _run(
        runtime,
        mounts=[
            "/data/imagenet",
            ["/models/resnet50.pt", "tiny-conv", ""],  # a name, not a path: not mounted
            {"resnet50": "/models/r50.onnx", "bert-99": "tiny-mlp"},
            "/data/imagenet/",  # the same folder again
            "/var/lib/miglab-mlperf/results/conf/user.conf",  # in the results mount already
        ],
    )
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "--mount"]
    assert mounts == [
        "type=bind,source=/data/imagenet,target=/data/imagenet,readonly",
        "type=bind,source=/models/resnet50.pt,target=/models/resnet50.pt,readonly",
        "type=bind,source=/models/r50.onnx,target=/models/r50.onnx,readonly",
    ]


def test_runtime_option_instead_of_gpus_and_no_gpu(runtime):
    argv = _run(runtime, run_args=["--runtime=nvidia", "--env", "NVIDIA_VISIBLE_DEVICES=all"])
    assert "--runtime=nvidia" in argv and "--gpus" not in argv
    assert "--gpus" not in _run(runtime, run_args=[])


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"run_args": "--gpus all"}, "list of strings"),
        ({"results_dir": "results"}, "absolute"),
        ({"code_dir": "code"}, "absolute"),
    ],
)
def test_bad_container_settings_are_refused(runtime, kw, match):
    with pytest.raises(AnsibleFilterError, match=match):
        _run(runtime, **kw)


# --- the run record and the report ---------------------------------------------------------------


def test_the_run_records_its_runtime():
    from miglab.mlperf.guest.runtime import runtime_record

    rec = runtime_record(
        {
            "MIGLAB_MLPERF_RUNTIME": "container",
            "MIGLAB_MLPERF_IMAGE": "localhost/miglab-sim-mlperf-runtime:latest",
            "MIGLAB_MLPERF_IMAGE_ID": "sha256:9d7d",
        }
    )
    assert rec["kind"] == "container" and rec["container"] is True
    assert rec["image"] == "localhost/miglab-sim-mlperf-runtime:latest"
    assert rec["image_id"] == "sha256:9d7d" and rec["python"].startswith("CPython 3.")
    venv = runtime_record({})
    assert venv["container"] is False and "image" not in venv
    assert venv["kind"] in ("venv", "python")


def test_run_options_record_the_runtime():
    from miglab.mlperf.guest.run import build_parser, settings_from_args

    argv = [
        "--benchmark",
        "resnet50",
        "--scenario",
        "Offline",
        "--sut",
        "slice-model",
        "--out",
        "/o",
    ]
    a = build_parser().parse_args(argv)
    assert settings_from_args(a).meta["runtime"]["kind"] in ("venv", "python", "container")


def test_the_report_names_the_runtime():
    from miglab.mlperf.results.report import runtime_label

    assert (
        runtime_label({"kind": "container", "container": True, "image": "img:1",
                       "image_id": "sha256:0123456789abcdef0123"})
        == "container img:1 (sha256:0123456789ab)"
    )  # fmt: skip
    assert runtime_label({"kind": "venv", "container": False, "python": "CPython 3.11.2 (/x)"}) == (
        "virtualenv (CPython 3.11.2)"
    )
    assert runtime_label(None) is None and runtime_label({}) is None


# --- the role's wiring ---------------------------------------------------------------------------


def test_the_role_runs_in_a_container_by_default_and_documents_its_variables():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    assert defaults["mlperf_runtime"] == "container"
    assert options["mlperf_runtime"]["choices"] == ["container", "venv"]
    assert defaults["mlperf_docker_run_args"] == ["--gpus", "all"]
    names = (
        "mlperf_image",
        "mlperf_image_archive",
        "mlperf_image_archive_src",
        "mlperf_docker_run_args",
        "mlperf_container_mounts",
        "mlperf_container_python",
    )
    for name in names:
        assert name in defaults and options[name]["default"] == defaults[name], name


def test_no_guest_command_is_tied_to_the_virtualenv():
    """The session, ready and release commands go through the runtime's prefix."""
    for name in ("runs.yml", "run.yml"):
        text = (ROLE / "tasks" / name).read_text()
        assert "mlperf_venv }}/bin/python" not in text and "mlperf_venv ~ '/bin/python'" not in text
        assert "__mlperf_python +" in text
    runs = (ROLE / "tasks" / "runs.yml").read_text()
    assert "container.yml" in runs and "Remove the wave's runtime container" in runs
    # what the runs read in the guest is mounted: weights, models, confs, accuracy datasets
    container = (ROLE / "tasks" / "container.yml").read_text()
    for name in ("mlperf_weights", "mlperf_models", "mlperf_user_conf", "mlperf_accuracy_args"):
        assert name in container.split("mounts=", 1)[1], name


def _driver(cuda="12.2", driver="535.216.01"):
    guest = collection_module("plugins.filter.guest").FilterModule().filters()
    text = VGPU_535_Q.read_text()
    text = re.sub(r"(Driver Version\s+: ).*", rf"\g<1>{driver}", text)
    text = re.sub(r"(CUDA Version\s+: ).*", rf"\g<1>{cuda}", text)
    text = re.sub(r"(Product Brand\s+: ).*", r"\g<1>NVIDIA Virtual Compute Server", text, count=1)
    return guest, guest["cuda_driver"](text)


def test_an_image_too_new_for_the_guest_driver_is_refused_with_the_variable_to_change():
    """What container.yml's check says (the guest filters, as the role calls them)."""
    guest, r535 = _driver()
    from miglab.sim.lab import RUNTIME_CONTAINERFILE

    sim_env = [
        line.strip().rstrip("\\").strip()
        for line in RUNTIME_CONTAINERFILE.splitlines()
        if "NVIDIA_REQUIRE_CUDA" in line
    ]
    assert sim_env == ['NVIDIA_REQUIRE_CUDA="cuda>=12.2"']
    assert guest["cuda_image_refusal"](["NVIDIA_REQUIRE_CUDA=cuda>=12.2"], "sim", r535, "x") == ""
    refusal = guest["cuda_image_refusal"](
        [
            "CUDA_VERSION=12.4.1",
            "NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=470,driver<471",
        ],
        "nvcr.io/nvidia/pytorch:24.03-py3",
        r535,
        "mlperf_image",
    )
    assert "cuda>=12.4" in refusal and "CUDA 12.2" in refusal and "Set mlperf_image" in refusal
    container = (ROLE / "tasks" / "container.yml").read_text()
    assert "miglab.lab.cuda_image_refusal(mlperf_image" in container


# --- the Dockerfile for real labs (cannot be built here: no registry) --------------------------


def _dockerfile():
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    args, froms, runs = {}, [], []
    for line in text.splitlines():
        words = line.strip().split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "ARG":
            name, _, value = words[1].partition("=")
            args[name] = shlex.split(value)[0] if value else ""
        elif words[0] == "FROM":
            froms.append(words[1])
        elif words[0] == "RUN":
            runs.append(words[1])
    return args, froms, runs


def test_the_dockerfile_builds_from_an_ngc_pytorch_base_for_cuda_12_2():
    args, froms, runs = _dockerfile()
    assert froms == ["${BASE}"]
    assert re.fullmatch(r"nvcr\.io/nvidia/pytorch:2[3-9]\.\d\d-py3", args["BASE"])
    # R535 offers CUDA 12.2: NGC PyTorch 23.08-23.10 (23.11 is CUDA 12.3)
    assert args["BASE"].split(":")[1] in ("23.08-py3", "23.09-py3", "23.10-py3")
    assert any("pip install" in r and "${PACKAGES}" in r for r in runs)


def test_the_dockerfile_has_every_package_the_role_lists():
    """The role's mlperf_packages (the torch SUT's) come from the base or from PACKAGES, with the
    same LoadGen floor."""
    args, _, _ = _dockerfile()
    packages = args["PACKAGES"].split()
    base = args["BASE_PACKAGES"].split()
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())

    def name(spec):
        return re.split(r"[<>=!~ \[]", spec, maxsplit=1)[0].lower()

    have = {name(p) for p in packages} | {name(p) for p in base}
    for spec in defaults["mlperf_packages"]:
        assert name(spec) in have, spec
    loadgen = [s for s in defaults["mlperf_packages"] if name(s) == "mlcommons-loadgen"]
    assert (
        loadgen
        == [p for p in packages if name(p) == "mlcommons-loadgen"]
        == ["mlcommons-loadgen>=5.0.6"]
    )


# --- the simulated lab ---------------------------------------------------------------------------


def test_the_simulated_guests_mount_the_lab_images_read_only(monkeypatch):
    from miglab.sim import daemon

    monkeypatch.delenv("MIGLAB_SIM_GUEST_IMAGES", raising=False)
    assert daemon.guest_run_options() == daemon.GUEST_RUN_OPTIONS
    monkeypatch.setenv("MIGLAB_SIM_GUEST_IMAGES", "/p/.cache/sim/images")
    assert (
        daemon.guest_run_options()[-1]
        == "--volume=/p/.cache/sim/images:/var/lib/miglab-sim/images:ro"
    )


def test_the_simulated_lab_uses_the_container_runtime_with_its_archive():
    from miglab.sim import daemon, lab

    roles = yaml.safe_load((ROOT / "inventories/sim/group_vars/guests/roles.yml").read_text())
    assert roles["mlperf_runtime"] == "container"
    assert roles["mlperf_image"] == lab.RUNTIME_IMAGE
    assert roles["mlperf_image_archive"] == f"{daemon.GUEST_IMAGES_DIR}/{lab.RUNTIME_ARCHIVE}"
    assert set(lab.RUNTIME_IMAGE_PACKAGES) <= set(lab.RUNTIME_PACKAGES)  # from the wheelhouse
