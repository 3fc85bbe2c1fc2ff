"""miglab.core.esxi: parsers on real ESXi / nvidia-smi output (tests/fixtures/esxi, see its README)
and
the decisions the ESXi host roles take (driver plan, MIG plan, graphics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from miglab.core import esxi
from miglab.errors import ValidationError
from miglab.formats import esxcli
from testlib import ROOT, collection_module

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / "esxi" / name).read_text()


# --- parsers on real captures ----------------------------------------------------------------


def test_vib_list_esxi_703_capture():
    rows = esxcli.parse_vib_list(read("vib-list-7.0.3.txt"))
    assert [r["name"] for r in rows] == ["ixgben", "itp_tools", "atlantic"]
    assert rows[2] == {
        "name": "atlantic",
        "version": "1.0.3.0-8vmw.703.0.20.19193900",
        "vendor": "VMW",
        "acceptance_level": "VMwareCertified",
        "install_date": "2023-05-05",
    }


def test_vib_list_grep_cut_nvidia_row():
    rows = esxcli.parse_vib_list(
        read("vib-list-7.0.3-nvidia-grep.txt"), columns=esxcli.VIB_LIST_COLUMNS
    )
    assert rows == [
        {
            "name": "NVIDIA-VMware_ESXi_7.0.2_Driver",
            "version": "510.73.06-1OEM.702.0.0.17630552",
            "vendor": "NVIDIA",
            "acceptance_level": "VMwareAccepted",
            "install_date": "2022-08-15",
        }
    ]
    drv, problems = esxi.installed_driver(None, rows)
    assert problems == [] and drv["driver_version"] == "510.73.06" and drv["esxi"] == "7.0.2"


def test_component_list_esxi_80_nvd_aie_row():
    rows = esxcli.parse_component_list(
        read("component-list-8.0-nvd-aie-grep.txt"), columns=esxcli.COMPONENT_LIST_COLUMNS
    )
    assert rows == [
        {
            "name": "NVD-AIE-800",
            "display_name": "NVIDIA AI Enterprise vGPU driver for VMWare ESX-8.0.0",
            "version": "525.105.14-1OEM.800.1.0.20613240",
            "display_version": "525.105.14",
            "vendor": "NVIDIA",
            "release_date": "03-27-2023",
            "acceptance_level": "VMwareAccepted",
            "platforms": "host",
        }
    ]
    drv, _ = esxi.installed_driver(rows, None)
    assert (drv["source"], drv["driver_version"], drv["esxi"]) == (
        "component",
        "525.105.14",
        "8.0.0",
    )


def test_component_apply_result_capture():
    res = esxcli.parse_install_result(read("component-apply-8.0-nvd-aie.txt"))
    assert res == {
        "message": "Operation finished successfully.",
        "reboot_required": False,  # as printed -- the driver still loads only at the next boot
        "installed": ["NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240"],
        "removed": [],
        "skipped": [],
        "kind": "component",
    }


def test_vib_install_result():
    text = (
        "Installation Result\n"
        "   Message: Operation finished successfully.\n"
        "   VIBs Installed: NVIDIA_bootbank_NVD-AIE_ESXi_7.0.2_Driver_535.154.02-1OEM.702.0.0\n"
        "   VIBs Removed: NVIDIA_bootbank_A_1, NVIDIA_bootbank_B_2\n"
        "   VIBs Skipped:\n"
        "   Reboot Required: true\n"
    )
    res = esxcli.parse_install_result(text)
    assert res["kind"] == "vib" and res["reboot_required"] is True
    assert res["removed"] == ["NVIDIA_bootbank_A_1", "NVIDIA_bootbank_B_2"]


def test_vmware_version_captures():
    assert esxcli.parse_vmware_version(read("vmware-vl-7.0.3.txt")) == {
        "product": "VMware ESXi",
        "version": "7.0.3",
        "build": 19898904,
        "level": "Update 3",
    }
    v5 = esxcli.parse_vmware_version(read("vmware-v-l-5.0.0.txt"))
    assert (v5["version"], v5["build"], v5["level"]) == ("5.0.0", 469512, "GA")


def test_acceptance_capture():
    assert esxcli.parse_acceptance(read("acceptance-get.txt")) == "PartnerSupported"
    with pytest.raises(ValidationError, match="not an acceptance level"):
        esxcli.parse_acceptance("partner")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty output"),
        ("Name  Version\nfoo  1.0\n", "no line of dashes"),
        ("----  ----\nfoo   1.0\n", "without column titles"),
        ("Name  Version\n----  -------\nlongname1.0\n", "runs into column"),
        ("VMware ESXi 7.0\n", None),
    ],
)
def test_table_errors(text, reason):
    if reason is None:
        with pytest.raises(ValidationError, match="not vmware -v/-l output"):
            esxcli.parse_vmware_version(text)
        return
    with pytest.raises(ValidationError, match=reason):
        esxcli.parse_table(text)


def test_grep_cut_row_with_wrong_column_count():
    with pytest.raises(ValidationError, match="expected 5 columns"):
        esxcli.parse_vib_list("a  b  c\n", columns=esxcli.VIB_LIST_COLUMNS)


def test_esxcli_errors():
    meta = (
        "[MetadataDownloadError]\n Could not download from depot at zip:/x.zip?index.xml\n"
        "        url = zip:/x.zip?index.xml\n Please refer to the log file for more details.\n"
    )
    err = esxcli.parse_esxcli_error(meta)
    assert err["error"] == "MetadataDownloadError" and "Could not download" in err["message"]
    assert esxcli.parse_esxcli_error("Error: Unknown command or namespace software foo")[
        "error"
    ] == ("Error")
    assert esxcli.parse_esxcli_error("PartnerSupported\n") is None


@pytest.mark.parametrize(
    "version, driver, release",
    [
        ("525.105.14-1OEM.800.1.0.20613240", "525.105.14", "8.0.0"),
        ("510.73.06-1OEM.702.0.0.17630552", "510.73.06", "7.0.2"),
        ("1.0.3.0-8vmw.703.0.20.19193900", "1.0.3.0", "7.0.3"),
        ("2.0.8", "2.0.8", None),
    ],
)
def test_package_versions(version, driver, release):
    assert esxi.package_version(version) == {"driver": driver, "esxi": release}


def test_pci_id():
    assert esxi.pci_id("00000000:3B:00.0") == "0000:3b:00.0"
    assert esxi.pci_id("00000001:AF:00.1") == "0001:af:00.1"


# --- nvidia-smi states -------------------------------------------------------------------------


def test_nvsmi_loaded_real_h200_capture():
    text = (FIXTURES / "nvidia-smi" / "h200-query-gpu.csv").read_text()
    state = esxi.nvsmi_state({"rc": 0, "stdout": text})
    assert state["state"] == "loaded" and state["driver_version"] == "580.159.04"
    gpu = state["gpus"][0]
    assert (gpu["index"], gpu["pci_id"], gpu["mig_current"], gpu["mig_pending"]) == (
        0,
        "0000:00:06.0",
        False,
        False,
    )


def test_nvsmi_query_missing_fields_capture():
    state = esxi.nvsmi_state({"rc": 0, "stdout": read("query-gpu-mig-na.csv")})
    assert state["state"] == "error" and "lacks pci.bus_id, driver_version" in state["message"]


@pytest.mark.parametrize(
    "result, state",
    [
        ({"rc": 2, "msg": "Error executing command."}, "absent"),  # ansible-core 2.19
        ({"rc": 2, "msg": "[Errno 2] No such file or directory: b'nvidia-smi'"}, "absent"),
        ({"rc": 127, "stderr": "sh: nvidia-smi: not found"}, "absent"),
        (
            {
                "rc": 9,
                "stdout": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                "driver. Make sure that the latest NVIDIA driver is installed and running.",
            },
            "not_loaded",
        ),
        (
            {"rc": 18, "stdout": "Failed to initialize NVML: Driver/library version mismatch"},
            "mismatch",
        ),
        ({"rc": 3, "stdout": "something else"}, "error"),
        (None, "absent"),
    ],
)
def test_nvsmi_failure_states(result, state):
    assert esxi.nvsmi_state(result)["state"] == state


# --- branches -----------------------------------------------------------------------------------


def test_branches():
    assert esxi.branch_problem("535.154.02", "535.154.05") is None
    why = esxi.branch_problem("535.154.02", "550.54.15")
    assert "R550 (vGPU 17)" in why and "R535 (vGPU 16)" in why
    # NVIDIA's rule: host from the next branch runs the previous branch's guest driver.
    assert esxi.branch_problem("550.54.16", "535.154.05", "nvidia") is None
    assert esxi.branch_problem("535.154.02", "550.54.15", "nvidia") is not None
    assert esxi.branch_problem("580.65.05", "535.154.05", "nvidia") is not None
    assert "not one of" in esxi.branch_problem("535.1", "535.2", "loose")
    assert "not an NVIDIA driver version" in esxi.branch_problem("x", "535.1")


# --- driver plan ----------------------------------------------------------------------------------


def esxcli_table(titles: list[str], rows: list[list[str]]) -> str:
    """A table the way esxcli prints one (columns as wide as their widest cell, two spaces apart,
    a dash rule): the layout of the captures above, for made-up rows."""
    widths = [max([len(t)] + [len(r[i]) for r in rows]) for i, t in enumerate(titles)]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(titles), "  ".join("-" * w for w in widths), *map(line, rows)]) + "\n"


QUERY = "index, pci.bus_id, name, driver_version, mig.mode.current, mig.mode.pending\n"
NVD = "NVIDIA AI Enterprise vGPU driver for VMWare ESX-7.0.2"


def facts(
    installed=None,
    loaded="same",
    bundle="535.154.02",
    level="VMwareAccepted",
    host_level="PartnerSupported",
    target="702",
    vib="NVD-AIE_ESXi_7.0.2_Driver",
    bundle_vib="NVD-AIE_ESXi_7.0.2_Driver",
):
    """Host facts in the esxcli / nvidia-smi formats (None: not installed / not read)."""
    comps = [
        ["ESXi", "ESXi", "7.0.3-0.20.19193900", "7.0 Update 3c", "VMware, Inc.", "VMwareCertified"]
    ]
    vibs = [["atlantic", "1.0.3.0-8vmw.703.0.20.19193900", "VMW", "VMwareCertified", "2023-05-05"]]
    if installed:
        version = f"{installed}-1OEM.702.0.0.17630552"
        comps.append(["NVD-AIE-702", NVD, version, installed, "NVIDIA", "VMwareAccepted"])
        vibs.append([vib, version, "NVIDIA", "VMwareAccepted", "2023-11-30"])
    f = {
        "vmware_vl": read("vmware-vl-7.0.3.txt"),
        "acceptance": host_level + "\n",
        "components": esxcli_table(
            ["Name", "Display Name", "Version", "Display Version", "Vendor", "Acceptance Level"],
            comps,
        ),
        "vibs": esxcli_table(
            ["Name", "Version", "Vendor", "Acceptance Level", "Install Date"], vibs
        ),
        "bundle_vibs": None,
    }
    if bundle is not None:
        row = [bundle_vib, f"{bundle}-1OEM.{target}.0.0.17630552", "NVIDIA", "2023-11-03", level]
        f["bundle_vibs"] = esxcli_table(
            ["Name", "Version", "Vendor", "Creation Date", "Acceptance Level", "Status"],
            [row + ["New"]],
        )
    running = installed if loaded == "same" else loaded
    if installed is None:
        f["nvidia_smi"] = {"rc": 2, "msg": "Error executing command."}
    elif running is None:
        f["nvidia_smi"] = {"rc": 9, "stdout": "couldn't communicate with the NVIDIA driver"}
    else:
        f["nvidia_smi"] = {
            "rc": 0,
            "stdout": QUERY + f"0, 00000000:3B:00.0, NVIDIA A100 80GB PCIe, {running}, Disabled, "
            "Disabled\n",
        }
    return f


WANT = {"version": "535.154.02", "guest_driver_version": "535.154.05"}


def test_plan_fresh_host_installs():
    plan = esxi.plan_driver(facts(), WANT)
    assert (plan["action"], plan["install"], plan["reboot"], plan["problems"]) == (
        "install",
        True,
        True,
        [],
    )
    assert plan["bundle"]["acceptance_level"] == "VMwareAccepted"
    assert plan["esxi"]["version"] == "7.0.3" and plan["acceptance"] == "PartnerSupported"
    assert plan["loaded"]["state"] == "absent"


def test_plan_first_phase_reads_only_the_installed_state():
    f = facts()
    f.update(vmware_vl=None, acceptance=None, bundle_vibs=None)
    plan = esxi.plan_driver(f, WANT)
    assert plan["action"] == "install" and plan["problems"] == []
    assert "checked on the host before anything is installed" in plan["notes"][0]


def test_plan_already_installed_does_nothing():
    plan = esxi.plan_driver(facts(installed="535.154.02"), WANT)
    assert (plan["action"], plan["reboot"], plan["problems"]) == ("none", False, [])
    assert plan["summary"] == "driver 535.154.02 installed and running: nothing to do"


def test_plan_installed_not_running_reboots():
    plan = esxi.plan_driver(facts(installed="535.154.02", loaded=None), WANT)
    assert (plan["action"], plan["install"], plan["reboot"]) == ("reboot", False, True)


def test_plan_different_versions():
    up = esxi.plan_driver(facts(installed="535.129.03"), WANT)
    assert up["action"] == "upgrade" and up["problems"] == []
    down = esxi.plan_driver(facts(installed="535.161.07"), WANT)
    assert down["action"] == "downgrade"
    assert any("downgrade needs allow_downgrade" in p for p in down["problems"])
    assert (
        esxi.plan_driver(facts(installed="535.161.07"), {**WANT, "allow_downgrade": True})[
            "problems"
        ]
        == []
    )


@pytest.mark.parametrize(
    "kwargs, want, problem",
    [
        ({"host_level": "VMwareCertified"}, {}, "host acceptance level VMwareCertified does not"),
        ({"bundle": "550.54.16"}, {}, "the bundle holds driver 550.54.16"),
        ({"target": "800"}, {}, "built for ESXi 8.0.0"),
        ({}, {"guest_driver_version": "550.54.15"}, "guest driver 550.54.15 is from R550"),
        ({}, {"version": "latest"}, "is not like 535.154.02"),
        (
            {"installed": "535.129.03", "vib": "NVIDIA-VMware_ESXi_7.0.2_Driver"},
            {},
            "remove the installed driver first",
        ),
    ],
)
def test_plan_refusals(kwargs, want, problem):
    plan = esxi.plan_driver(facts(**kwargs), {**WANT, **want})
    assert any(problem in p for p in plan["problems"]), plan["problems"]


def test_plan_acceptance_allows_equal_or_more_trusted():
    assert esxi.plan_driver(facts(host_level="VMwareAccepted"), WANT)["problems"] == []
    assert esxi.plan_driver(facts(host_level="CommunitySupported"), WANT)["problems"] == []


def test_plan_several_drivers_and_unparsable_output():
    f = facts(installed="535.154.02")
    two = [
        [name, "535.154.02-1OEM.702.0.0.17630552", "NVIDIA", "VMwareAccepted", "2023-11-30"]
        for name in ("NVD-AIE_ESXi_7.0.2_Driver", "NVD-VGPU_ESXi_7.0.2_Driver")
    ]
    f["vibs"] = esxcli_table(["Name", "Version", "Vendor", "Acceptance Level", "Install Date"], two)
    f["components"] = facts()["components"]
    assert any("several NVIDIA host drivers" in p for p in esxi.plan_driver(f, WANT)["problems"])
    f = facts()
    f["acceptance"] = "garbage"
    assert any("not an acceptance level" in p for p in esxi.plan_driver(f, WANT)["problems"])


def test_plan_bundle_without_driver():
    f = facts(bundle_vib="some-other-vib")
    problems = esxi.plan_driver(f, WANT)["problems"]
    assert any("holds no NVIDIA host driver VIB" in p for p in problems)


def test_verify_driver():
    ok = esxi.verify_driver(facts(installed="535.154.02"), {"version": "535.154.02"})
    assert ok["ok"] and ok["loaded"]["driver_version"] == "535.154.02"
    bad = esxi.verify_driver(facts(installed="535.154.02", loaded=None), {"version": "535.154.02"})
    assert not bad["ok"] and "not running" in bad["problems"][0]
    old = esxi.verify_driver(facts(installed="535.129.03"), {"version": "535.154.02"})
    assert "installed driver is 535.129.03" in old["problems"][0]


# --- MIG ------------------------------------------------------------------------------------------


def query(*gpus) -> dict:
    """nvidia-smi --query-gpu result for (name, current, pending) per GPU."""
    rows = "".join(
        f"{n}, 00000000:{0x3B + 0x23 * n:02X}:00.0, {name}, 535.154.02, {cur}, {pend}\n"
        for n, (name, cur, pend) in enumerate(gpus)
    )
    return {"rc": 0, "stdout": QUERY + rows}


A100 = "NVIDIA A100 80GB PCIe"


def test_mig_wanted_from_the_seed_campaign_plan():
    from miglab.adapters.inventory import load_checked
    from miglab.core.planning import plan_campaign

    campaign, lab = load_checked(ROOT / "campaigns" / "r750xa-a100-80gb-mig.yml", None)
    plan = plan_campaign(campaign, lab).as_json()
    out = esxi.mig_wanted(plan, "esxi-01.sim.miglab.test", gpu_count=4)
    assert out["problems"] == [] and out["wanted"] == {0: True, 1: True, 2: True, 3: True}
    assert out["uses"][0][0].endswith(":mig")
    assert esxi.mig_wanted(plan, "another-host")["wanted"] == {}


def test_mig_wanted_modes_conflicts_overrides():
    plan = {
        "scenarios": [
            {"id": "s1", "gpus": [{"host": "h", "index": 0, "mode": "mig"}]},
            {"id": "s2", "gpus": [{"host": "h", "index": 1, "mode": "time-sliced"}]},
            {"id": "s3", "gpus": [{"host": "h", "index": 0, "mode": "time-sliced"}]},
        ]
    }
    out = esxi.mig_wanted(plan, "h")
    assert out["wanted"] == {1: False}
    assert "MIG-backed and time-sliced" in out["problems"][0]
    out = esxi.mig_wanted(plan, "h", explicit={"0": "enabled"}, disable_unused=True, gpu_count=3)
    assert out == {**out, "wanted": {0: True, 1: False, 2: False}, "problems": []}
    assert "does not exist" in esxi.mig_wanted(None, "h", {5: True}, gpu_count=2)["problems"][0]
    assert "is not enabled or disabled" in esxi.mig_wanted(None, "h", {0: "maybe"})["problems"][0]


def test_mig_plan_enable_then_pending_then_reboot():
    before = esxi.plan_mig(query((A100, "Disabled", "Disabled"), (A100, "Enabled", "Enabled")),
                           {0: True, 1: False})  # fmt: skip
    assert (before["enable"], before["disable"], before["activate"]) == ([0], [1], [])
    # Ampere on ESXi: the new modes stay pending until a reset or a reboot.
    after = esxi.plan_mig(query((A100, "Disabled", "Enabled"), (A100, "Enabled", "Disabled")),
                          {0: True, 1: False})  # fmt: skip
    assert (after["enable"], after["disable"], after["activate"]) == ([], [], [0, 1])
    assert after["activation"] == "reboot" and after["problems"] == []


H100 = "NVIDIA H100 PCIe"


def test_mig_plan_reset_only_when_allowed_and_idle():
    pending = query((H100, "Disabled", "Enabled"))
    idle = {"0000:3b:00.0": []}
    assert esxi.plan_mig(pending, {0: True}, idle, allow_reset=True)["activation"] == "reset"
    busy = esxi.plan_mig(pending, {0: True}, {"0000:3b:00.0": ["vm1"]}, allow_reset=True)
    assert busy["activation"] == "reboot" and "vm1 use it" in busy["notes"][0]
    unknown = esxi.plan_mig(pending, {0: True}, None, allow_reset=True)
    assert unknown["activation"] == "reboot" and "VMs unknown" in unknown["notes"][0]
    stuck = esxi.plan_mig(pending, {0: True}, idle, allow_reset=False, allow_reboot=False)
    assert "neither of which is allowed" in stuck["problems"][0]


def test_mig_plan_ampere_reboots_even_when_reset_is_allowed():
    """V10: NVIDIA prescribes a host reboot for Ampere on ESXi; a reset only for Hopper."""
    idle = {"0000:3b:00.0": [], "0000:5e:00.0": []}
    for name in (A100, "NVIDIA A30", "NVIDIA A100-PCIE-40GB"):
        plan = esxi.plan_mig(
            query((name, "Disabled", "Enabled")), {0: True}, idle, allow_reset=True
        )
        assert (plan["activation"], plan["reset"]) == ("reboot", []), name
        assert "Ampere): not supported on ESXi, NVIDIA prescribes a host reboot" in plan["notes"][0]
    # one Ampere GPU among them: the reboot does it for all (no reset of the Hopper GPU first)
    mixed = esxi.plan_mig(query((H100, "Disabled", "Enabled"), (A100, "Disabled", "Enabled")),
                          {0: True, 1: True}, idle, allow_reset=True)  # fmt: skip
    assert (mixed["activation"], mixed["reset"]) == ("reboot", [])
    # a GPU the catalog does not know: no documented reset either
    odd = esxi.plan_mig(query(("NVIDIA X1", "Disabled", "Enabled")), {0: True}, idle, True)
    assert odd["activation"] == "reboot" and "architecture unknown" in odd["notes"][0]
    # reset allowed, reboot not: a clear problem naming the GPU and why
    stuck = esxi.plan_mig(query((A100, "Disabled", "Enabled")), {0: True}, idle, True, False)
    assert stuck["activation"] == "none"
    assert "GPU 0 (NVIDIA A100 80GB PCIe, Ampere) needs a host reboot" in stuck["problems"][0]
    assert "esxi_mig_reboot false" in stuck["problems"][0]


def test_mig_plan_nothing_to_do_and_problems():
    done = esxi.plan_mig(query((A100, "Enabled", "Enabled")), {0: "enabled"})
    assert done["summary"] == "MIG modes as wanted: nothing to do"
    na = esxi.plan_mig(query(("NVIDIA L40S", "[N/A]", "[N/A]")), {0: True})
    assert "does not support MIG" in na["problems"][0]
    assert (
        "does not exist"
        in esxi.plan_mig(query((A100, "Enabled", "Enabled")), {3: True})["problems"][0]
    )
    gone = esxi.plan_mig({"rc": 2, "msg": "Error executing command."}, {0: True})
    assert "is the NVIDIA host driver installed" in gone["problems"][0]


def test_verify_mig():
    assert esxi.verify_mig(query((A100, "Enabled", "Enabled")), {0: True})["ok"]
    bad = esxi.verify_mig(query((A100, "Disabled", "Enabled")), {0: True})
    assert "current False, pending True, wanted Enabled" in bad["problems"][0]


# --- graphics -------------------------------------------------------------------------------------


def test_graphics_restart_pending():
    info = {
        "graphics_config": {"default_graphics_type": "sharedDirect", "devices": {}},
        "graphics_info": [
            {"pci_id": "0000:3b:00.0", "graphics_type": "shared"},
            {"pci_id": "0000:5e:00.0", "graphics_type": "direct"},  # passthrough: not ours
        ],
    }
    out = esxi.graphics_restart_pending(info)
    assert out == {
        "pending": True,
        "gpus": [{"pci_id": "0000:3b:00.0", "in_effect": "shared", "configured": "sharedDirect"}],
        "no_driver": [],
    }
    info["graphics_info"][0]["graphics_type"] = "sharedDirect"
    assert esxi.graphics_restart_pending(info)["pending"] is False
    info["graphics_config"]["devices"] = {"0000:3B:00.0": "shared"}
    assert esxi.graphics_restart_pending(info)["pending"] is True


def test_graphics_basic_before_the_driver():
    """V9: before the host driver a GPU's graphics type is basic: pending, and named."""
    info = {
        "graphics_config": {"default_graphics_type": "sharedDirect", "devices": {}},
        "graphics_info": [{"pci_id": "0000:3B:00.0", "graphics_type": "basic"}],
    }
    out = esxi.graphics_restart_pending(info)
    assert out["pending"] is True and out["no_driver"] == ["0000:3b:00.0"]


def _host_info(types, *graphics):
    return {
        "name": "esxi-01",
        "vgpu_types": list(types),
        "graphics_info": [
            {"pci_id": f"0000:{b}:00.0", "vendor": "NVIDIA Corporation", "graphics_type": g}
            for b, g in zip(("3b", "5e"), graphics, strict=False)
        ],
    }


@pytest.mark.parametrize(
    ("types", "graphics", "vgpu", "why"),
    [
        ([], ("basic", "basic"), "grid_a100d-2-20c", "no NVIDIA host driver is loaded"),
        ([], ("shared", "basic"), "grid_a100d-2-20c", "graphics type basic, shared, not Shared"),
        (["grid_a100d-20c"], ("sharedDirect",), "grid_a100d-2-20c", "no GPU is in MIG mode"),
        (["grid_a100d-2-20c"], ("sharedDirect",), "grid_a100d-20c", "its GPUs are in MIG mode"),
        (["grid_a100d-2-20c"], ("sharedDirect",), "grid_zz-1c", "catalog does not know"),
        (
            ["grid_a100d-2-20c"],
            ("sharedDirect",),
            "nvidia_h100-1-10c",
            "not a type of this host's GPUs (it is a vGPU type of H100",
        ),
        ([], (), "grid_a100d-2-20c", "no NVIDIA GPU"),
    ],
)
def test_vgpu_offer_problems_say_why(types, graphics, vgpu, why):
    """V9: a type the host does not offer now, named with the host and the reason."""
    (line,) = esxi.vgpu_offer_problems(_host_info(types, *graphics), [vgpu])
    assert line.startswith(f"esxi-01: vGPU type {vgpu} is not offered now: ")
    assert why in line


def test_vgpu_offer_problems_none_when_offered():
    info = _host_info(["grid_a100d-2-20c"], "sharedDirect")
    assert esxi.vgpu_offer_problems(info, ["grid_a100d-2-20c"]) == []


# --- the filters are thin ------------------------------------------------------------------------


def test_filters_delegate_to_miglab():
    filt = collection_module("plugins.filter.esxi")
    filters = filt.FilterModule().filters()
    assert all(name.startswith("esxi_") for name in filters)
    plan = filters["esxi_driver_plan"](facts(installed="535.154.02"), "535.154.02")
    assert plan["action"] == "none"
    assert filters["esxi_gpu_vms"](
        {"graphics_info": [{"pci_id": "0000:3B:00.0", "vms": ["a"]}]}
    ) == {"0000:3b:00.0": ["a"]}
    assert filters["esxi_esxcli_error"]("[AcceptanceLevelError]\n too low") == (
        "AcceptanceLevelError: too low"
    )
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="not an esxcli 'Installation Result'"):
        filters["esxi_install_result"]("nope")
    # Every parsing filter reaches its parser (miglab.formats.esxcli): bad text is refused
    # with the parser's message, never an AttributeError.
    for name in ("esxi_vib_list", "esxi_component_list", "esxi_acceptance", "esxi_version"):
        with pytest.raises(AnsibleFilterError):
            filters[name]("not esxcli output")
