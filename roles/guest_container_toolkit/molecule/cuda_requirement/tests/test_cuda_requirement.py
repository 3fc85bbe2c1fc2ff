"""G4 (issue 16): the container toolkit stand-in checks an image's NVIDIA_REQUIRE_CUDA against the
GRID driver stand-in 535.216.01 (CUDA 12.2, C-series vGPU) as libnvidia-container does, and
Docker reports its refusal in the real form."""

import re

IMAGE_124 = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
IMAGE_122 = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04"
REFUSAL = (
    "Auto-detected mode as 'legacy'\n"
    "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update "
    "your driver to a newer version, or use an earlier cuda container"
)


def test_the_12_4_1_image_run_directly_is_refused_with_libnvidia_containers_text(host):
    res = host.run(
        f"docker run --rm --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all {IMAGE_124} nvidia-smi -L"
    )
    print(res.stderr)  # the whole message, for the record
    assert res.rc == 125, res.stdout + res.stderr
    assert res.stderr.startswith("docker: Error response from daemon: ")
    assert "OCI runtime create failed" in res.stderr
    # The wording around the hook's stderr is runc's and Docker's: Debian 12's (docker.io 20.10,
    # runc 1.1) says "error running hook #1: error running hook: exit status 1, ..." (#0 is
    # Docker's libnetwork-setkey hook), newer ones "error running prestart hook #0: ...".
    assert re.search(r"error running (prestart )?hook #\d+: ", res.stderr), res.stderr
    assert "exit status 1, stdout: , stderr: " + REFUSAL + ": unknown" in res.stderr
    assert "GPU 0" not in res.stdout


def test_the_12_2_2_image_runs_and_sees_the_gpu_through_the_hooks_mounts(host):
    # the hook the runtime adds (no --gpus): NVIDIA_VISIBLE_DEVICES=all is the image's
    out = host.check_output(f"docker run --rm --runtime=nvidia {IMAGE_122} nvidia-smi -L")
    assert out.startswith("GPU 0: NVIDIA H200X-141C (UUID: GPU-")
    # ... and docker's own for --gpus
    out = host.check_output(
        f"docker run --rm --runtime=nvidia --gpus all {IMAGE_122} nvidia-smi -L"
    )
    assert out.startswith("GPU 0: NVIDIA H200X-141C (UUID: GPU-")


def test_disable_require_and_no_gpu_pass_the_12_4_1_image(host):
    run = "docker run --rm --runtime=nvidia"
    out = host.check_output(f"{run} -e NVIDIA_DISABLE_REQUIRE=true {IMAGE_124} nvidia-smi -L")
    assert out.startswith("GPU 0: ")
    # not a GPU container: nothing checked, nothing mounted (the images have only busybox's sh)
    res = host.run(
        f"{run} -e NVIDIA_VISIBLE_DEVICES=void {IMAGE_124} sh -c 'test -e /usr/bin/nvidia-smi'"
    )
    assert res.rc == 1, res.stdout + res.stderr
