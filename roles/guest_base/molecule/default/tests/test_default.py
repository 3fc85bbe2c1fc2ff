"""guest_base verified inside the container: Docker really runs containers, daemon.json merged."""

import json


def test_build_tools(host):
    for pkg in ("build-essential", "cmake", "curl", "docker.io"):
        assert host.package(pkg).is_installed, pkg
    assert host.run("cmake --version").rc == 0
    assert host.run("gcc --version").rc == 0


def test_docker_running(host):
    docker = host.service("docker")
    assert docker.is_running
    assert docker.is_enabled


def test_lab_user_in_docker_group(host):
    assert "docker" in host.user("lab").groups


def test_daemon_json_merged_not_replaced(host):
    cfg = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert cfg["labels"] == ["miglab=prepare"]  # kept
    assert cfg["runtimes"]["miglab-runc"]["path"] == "runc"  # kept
    assert cfg["log-opts"] == {"max-file": "3", "max-size": "10m"}  # merged
    assert cfg["log-level"] == "info"  # added


def docker_api(host, path):
    """GET on Docker's API socket (curl is one of guest_base's packages)."""
    return json.loads(
        host.check_output(f"curl -sf --unix-socket /var/run/docker.sock http://docker{path}")
    )


def test_docker_applied_daemon_json(host):
    info = docker_api(host, "/info")
    assert "miglab-runc" in info["Runtimes"]  # the restart after the merge took effect
    assert "miglab=prepare" in info["Labels"]
    assert info["Driver"] == "overlay2"


def test_docker_runs_an_imported_image(host):
    host.check_output("docker import /root/tiny-rootfs.tar miglab/tiny:1")
    out = host.check_output("docker run --rm miglab/tiny:1 /bin/sh -c 'echo hello from docker'")
    assert out.strip() == "hello from docker"
    out = host.check_output(
        "docker run --rm --runtime=miglab-runc miglab/tiny:1 /bin/sh -c 'echo ok'"
    )
    assert out.strip() == "ok"


def test_lab_user_can_use_docker(host):
    out = host.check_output("su - lab -c 'docker run --rm miglab/tiny:1 /bin/sh -c \"echo lab\"'")
    assert out.strip() == "lab"
