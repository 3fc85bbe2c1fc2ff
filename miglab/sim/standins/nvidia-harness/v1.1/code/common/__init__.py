# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# __init__.py of github.com/mlcommons/inference_results_v1.1
# @ 912dcdb9163736beca40a1f86e25d1305deab549: get_system() detects the system the way the real
# one does, in the same order and with the same error texts (MIG check with `nvidia-smi -L`, then
# `nvidia-smi --query-gpu=gpu_name,pci.device_id,uuid --format=csv`, CUDA_VISIBLE_DEVICES applied
# by hand, the first GPU's name and 4-digit PCI device id, the first KnownSystems class in
# get_all_system_classes() order that matches); run_command() and the small helpers behave as the
# real ones. Written anew.
"""Shared helpers of the harness: system detection, commands, flags (stand-in)."""

import os
import sys

sys.path.insert(0, os.getcwd())

import logging  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
from code.common.system_list import KnownSystems, MIGConfiguration  # noqa: E402

VERSION = "v1.0"  # as the real module says (constants.VERSION is the round's)

logging.basicConfig(
    level=logging.INFO, format="[%(asctime)s %(filename)s:%(lineno)d %(levelname)s] %(message)s"
)

_XAVIER_MODEL = "/sys/firmware/devicetree/base/model"


def is_aarch64():
    return platform.processor() == "aarch64"


def is_xavier():
    return is_aarch64() and os.path.exists(_XAVIER_MODEL)


def check_xavier_version(s):
    if not is_xavier():
        return False
    with open(_XAVIER_MODEL) as f:
        return s in f.read()


def is_xavier_nx():
    return check_xavier_version("NX")


def is_xavier_agx():
    return check_xavier_version("AGX")


def check_mig_enabled():
    """True when ``nvidia-smi -L`` lists a MIG device (``MIG <g>g.<GB>gb``)."""
    proc = subprocess.run("nvidia-smi -L", shell=True, stdout=subprocess.PIPE, text=True)
    return any(re.search(r"MIG\s+\dg\.\d+gb", line) for line in proc.stdout.splitlines())


def get_gpu_uuid_from_mig_uuid(mig_uuid):
    """The uuid of the GPU holding MIG instance ``mig_uuid`` ("" if none)."""
    for gpu_uuid, slices in MIGConfiguration.get_gpu_mig_slice_mapping().items():
        if mig_uuid in [s.uuid for s in slices]:
            return gpu_uuid
    return ""


def get_system():
    """The System this machine is (see the file's header for the order of the checks)."""
    if os.environ.get("USE_CPU") == "1":
        info = run_command("lscpu | grep name", get_output=True, tee=False)
        model = info[0].replace("Model name:", "").strip()
        if "6258R" in model:
            return KnownSystems.Triton_CPU_2S_6258R.get_match("2S_6258R", 1)
        if "8380H" in model:
            return KnownSystems.Triton_CPU_4S_8380H.get_match("4S_8380H", 1)
        raise RuntimeError(f"Cannot find valid configs for {model}.")

    if is_xavier():
        with open(_XAVIER_MODEL) as f:
            product = f.read()
        if "jetson" in product.lower():
            if "AGX" in product:
                return KnownSystems.AGX_Xavier.get_match("Jetson-AGX", 1)
            if "NX" in product:
                return KnownSystems.Xavier_NX.get_match("Xavier NX", 1)
            raise RuntimeError(
                "Unrecognized aarch64 device. Only AGX Xavier and Xavier NX are supported."
            )

    mig_conf = None
    if check_mig_enabled():
        mig_conf = MIGConfiguration.from_nvidia_smi()
        if mig_conf.num_mig_slices() == 0:
            logging.warning("MIG is enabled, but no instances were detected.")
        else:
            logging.info(f"Found {mig_conf.num_mig_slices()} MIG compute instances")

    out = run_command(
        "CUDA_VISIBLE_ORDER=PCI_BUS_ID nvidia-smi "
        "--query-gpu=gpu_name,pci.device_id,uuid --format=csv",
        get_output=True,
        tee=False,
    )
    rows = [line for line in out[1:] if len(line) > 0]  # the first line is the CSV header
    index_of = {row.split(",")[2].strip(): i for i, row in enumerate(rows)}

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        picked, seen = [], set()
        for dev in visible.split(","):
            if dev.isnumeric():
                picked.append(int(dev))
                continue
            if dev.startswith("GPU-"):
                uuid = dev
            elif dev.startswith("MIG-"):
                uuid = get_gpu_uuid_from_mig_uuid(dev)
            else:
                raise RuntimeError("Invalid CUDA_VISIBILE_DEVICES")
            if uuid not in seen:
                seen.add(uuid)
                picked.append(index_of[uuid])
        rows = [rows[i] for i in picked]

    count = len(rows)
    if count == 0:
        raise RuntimeError(f"nvidia-smi did not detect any GPUs:\n{out}")

    name, pci_id, _uuid = rows[0].split(", ")
    assert pci_id[-4:] == "10DE"  # NVIDIA's PCI vendor id
    pci_id = pci_id.split("x")[1][:4]  # 0x20B510DE -> 20B5

    system = None
    for candidate in KnownSystems.get_all_system_classes():
        system = candidate.get_match(name, count, pci_id=pci_id, mig_conf=mig_conf)
        if system:
            break
    if system is None:
        raise RuntimeError(
            f"Cannot find valid configs for {count:d}x {name}. Please follow "
            "performance_tuning_guide.md to add support for a new GPU."
        )
    return system


def run_command(cmd, get_output=False, tee=True, custom_env=None):
    """Run ``cmd`` in a shell. Without get_output: its exit status (CalledProcessError when not
    0). With it: its stdout as a list of lines (printed too when ``tee``), CalledProcessError when
    it fails."""
    logging.info(f"Running command: {cmd}")
    if not get_output:
        return subprocess.check_call(cmd, shell=True)
    if custom_env is not None:
        logging.info("Overriding Environment")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, shell=True, env=custom_env)
    lines = []
    for raw in iter(proc.stdout.readline, b""):
        line = raw.decode("utf-8")
        if tee:
            sys.stdout.write(line)
            sys.stdout.flush()
        lines.append(line.rstrip("\n"))
    status = proc.wait()
    if status != 0:
        raise subprocess.CalledProcessError(status, cmd)
    return lines


def args_to_string(d, blacklist=(), delimit=True, double_delimit=False):
    """``--flag=value`` for every set flag: bools as true/false, numbers bare, others quoted."""
    flags = []
    for flag, value in d.items():
        if value is None or flag in blacklist:
            continue
        if type(value) is bool:
            flags.append(f"--{flag}={'true' if value else 'false'}")
        elif type(value) in (int, float) or not delimit:
            flags.append(f"--{flag}={value}")
        elif double_delimit:
            flags.append(f'--{flag}=\\"{value}\\"')
        else:
            flags.append(f'--{flag}="{value}"')
    return " ".join(flags)


def flags_bool_to_int(d):
    for flag, value in d.items():
        if type(value) is bool:
            d[flag] = 1 if value else 0
    return d


def dict_get(d, key, default=None):
    """``d[key]``, or ``default`` when missing or None."""
    value = d.get(key, default)
    return default if value is None else value
