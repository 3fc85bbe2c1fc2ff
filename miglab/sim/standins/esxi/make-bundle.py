#!/usr/bin/env python3
"""Write a STAND-IN NVIDIA host driver bundle for the ESXi stand-in (test infrastructure).

    make-bundle.py [--flavour AIE|VGPU|DAEMON] [--acceptance LEVEL] DRIVER ESXI OUT_DIR

writes OUT_DIR/NVD-<flavour>-<esxi>_<driver>-1OEM.<esxi>.0.0.<build>_<n>.zip (the vGPU Manager)
or, with --flavour DAEMON, OUT_DIR/nvd-gpu-mgmt-daemon_<driver>-0.0.0000_<n>.zip (the NVIDIA GPU
Management Daemon, NVIDIA's second host component; real-lab notes V8) and prints
"<path> sha256:<hex>". The name, component, VIB and version strings follow NVIDIA's offline
bundles (e.g. NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240_21506612.zip holding component
NVD-AIE-800 and VIB NVD-AIE_ESXi_8.0.0_Driver, see README.md); the content is only a manifest
(standin-depot.json) that esxi_standin.py reads, not a VMware depot, plus a payload of
pseudo-random bytes that gives the zip a real bundle's size relative to the stand-in's RAM disks
(README.md, "RAM disks": real bundles are 100+ MB, the root RAM disk ~32 MB; here 3 MiB and 1 MiB).
The zip is byte-identical for the same arguments (fixed timestamps, payload from SHAKE-256 of the
arguments), so its checksum is stable.

The daemon bundle follows a public ESXi 8 capture of NVIDIA's 525.147.01 download
(nvd-gpu-mgmt-daemon_525.147.01-0.0.0000_22624911.zip installing VIB
NVD_bootbank_nvdgpumgmtdaemon_525.147.01-1OEM.700.1.0.15843807, the same VIB on ESXi 7 and 8) and
the NVIDIA AI Enterprise 5 user guide (2.7.1: component nvd-gpu-mgmt-daemon); its display name
and release date are assumptions (README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import zipfile
from pathlib import Path

# ESXi GA builds that NVIDIA's VIB versions name (1OEM.702.0.0.17630552, 1OEM.800.1.0.20613240).
ESXI_BUILDS = {"7.0.2": "0.0.17630552", "8.0.0": "1.0.20613240"}
# The payload (stored, not deflated: random bytes do not compress): 3 MiB, three times the
# stand-in's 1 MiB root RAM disk, as a 100+ MB bundle is to ESXi's ~32 MB one.
PAYLOAD_BYTES = 3 << 20
FLAVOURS = {
    "AIE": "NVIDIA AI Enterprise vGPU driver for VMWare ESX-{esxi}",
    "VGPU": "NVIDIA vGPU driver for VMWare ESX-{esxi}",
    "DAEMON": "NVIDIA GPU Management Daemon",
}
# The daemon's VIB is built once for ESXi 7.0 U1 and later (the capture's 1OEM.700.1.0.15843807).
DAEMON_VIB_BUILD = "1OEM.700.1.0.15843807"


def daemon_manifest(driver: str, acceptance: str) -> dict:
    return {
        "standin": "miglab ESXi stand-in bundle: not NVIDIA software, not a VMware depot",
        "kind": "daemon",
        "driver_version": driver,
        "creation_date": "2023-11-03",
        "release_date": "11-03-2023",
        "component": {
            "name": "nvd-gpu-mgmt-daemon",
            "display_name": FLAVOURS["DAEMON"],
            "version": f"{driver}-0.0.0000",
            "display_version": driver,
            "vendor": "NVIDIA",
            "acceptance_level": acceptance,
        },
        "vib": {
            "name": "nvdgpumgmtdaemon",
            "version": f"{driver}-{DAEMON_VIB_BUILD}",
            "vendor": "NVIDIA",
            "acceptance_level": acceptance,
        },
    }


def manifest(driver: str, esxi: str, flavour: str, acceptance: str) -> dict:
    if flavour == "DAEMON":
        return daemon_manifest(driver, acceptance)
    tag = esxi.replace(".", "")
    version = f"{driver}-1OEM.{tag}.{ESXI_BUILDS[esxi]}"
    return {
        "standin": "miglab ESXi stand-in bundle: not NVIDIA software, not a VMware depot",
        "driver_version": driver,
        "creation_date": "2023-11-03",
        "release_date": "11-03-2023",
        "component": {
            "name": f"NVD-{flavour}-{tag}",
            "display_name": FLAVOURS[flavour].format(esxi=esxi),
            "version": version,
            "display_version": driver,
            "vendor": "NVIDIA",
            "acceptance_level": acceptance,
        },
        "vib": {
            "name": f"NVD-{flavour}_ESXi_{esxi}_Driver",
            "version": version,
            "vendor": "NVIDIA",
            "acceptance_level": acceptance,
        },
    }


def write(
    driver: str,
    esxi: str,
    out_dir: Path,
    flavour: str = "AIE",
    acceptance: str = "VMwareAccepted",
    payload_bytes: int = PAYLOAD_BYTES,
) -> tuple[Path, str]:
    data = manifest(driver, esxi, flavour, acceptance)
    depot_no = int(hashlib.sha256(f"{driver}{esxi}{flavour}".encode()).hexdigest()[:6], 16)
    name = f"{data['component']['name']}_{data['component']['version']}_{21000000 + depot_no}.zip"
    path = out_dir / name
    out_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for member, text in (
            ("standin-depot.json", json.dumps(data, indent=2, sort_keys=True) + "\n"),
            ("README.txt", data["standin"] + "\n"),
        ):
            info = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, text)
        seed = f"miglab stand-in bundle {driver} {esxi} {flavour} {acceptance}".encode()
        info = zipfile.ZipInfo("standin-payload.bin", date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        z.writestr(info, hashlib.shake_256(seed).digest(payload_bytes), zipfile.ZIP_STORED)
    return path, "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("driver", help="driver version, e.g. 535.154.02")
    ap.add_argument("esxi", choices=sorted(ESXI_BUILDS), help="ESXi release the bundle is for")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--flavour", choices=sorted(FLAVOURS), default="AIE")
    ap.add_argument(
        "--acceptance",
        default="VMwareAccepted",
        choices=["VMwareCertified", "VMwareAccepted", "PartnerSupported", "CommunitySupported"],
    )
    a = ap.parse_args()
    path, checksum = write(a.driver, a.esxi, a.out_dir, a.flavour, a.acceptance)
    print(f"{path} {checksum}")


if __name__ == "__main__":
    main()
