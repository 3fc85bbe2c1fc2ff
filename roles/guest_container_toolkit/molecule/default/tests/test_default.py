"""guest_container_toolkit from local .deb stand-ins: nvidia runtime merged, Docker uses it."""

import json


def docker_api(host, path):
    return json.loads(
        host.check_output(f"curl -sf --unix-socket /var/run/docker.sock http://docker{path}")
    )


def test_packages_from_the_local_debs(host):
    for name in ("nvidia-container-toolkit-base", "nvidia-container-toolkit"):
        pkg = host.package(name)
        assert pkg.is_installed and pkg.version == "1.17.8-1", name
    assert host.check_output("nvidia-ctk --version").startswith(
        "NVIDIA Container Toolkit CLI version 1.17.8"
    )
    assert host.file("/var/cache/miglab/nvidia-container-toolkit").is_directory


def test_daemon_json_merged_not_replaced(host):
    cfg = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert cfg == {
        "labels": ["miglab=guest_base"],  # guest_base's keys, written before the toolkit
        "log-level": "warn",
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
    }
    assert "default-runtime" not in cfg


def test_docker_restarted_with_the_runtime(host):
    info = docker_api(host, "/info")
    assert info["Runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
    assert info["DefaultRuntime"] == "runc"
    assert "miglab=guest_base" in info["Labels"]


def test_container_runs_through_the_nvidia_runtime(host):
    host.check_output("docker import /root/tiny-rootfs.tar miglab/tiny:1")
    out = host.check_output(
        "docker run --rm --runtime=nvidia miglab/tiny:1 /bin/sh -c 'echo via nvidia runtime'"
    )
    assert out.strip() == "via nvidia runtime"
