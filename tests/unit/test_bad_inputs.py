"""The bad-input corpus (tests/fixtures/bad-inputs, listed in its README.md): every malformed
campaign and lab inventory makes the real ``miglab`` exit 2 with one ``error: FILE: FIELD: reason``
line per problem -- the file and field this table expects, nothing else --, nothing on stdout and
no traceback. ``miglab run`` stops the same way before it takes the lab's lock or starts Ansible
(tests/integration/test_bad_input_no_calls.py proves that vCenter sees no call).

Each case pairs one bad file with the corpus's good counterpart (good/campaign.yml, good/lab/ --
whose vCenter password is a vault-encrypted value, accepted as it is). Files too big to commit
(over the 1 MB limit, or near it with too many nodes) are generated in tmp_path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from testlib import FIXTURES, ROOT, run_cli

CORPUS = FIXTURES / "bad-inputs"
GOOD_CAMPAIGN = "good/campaign.yml"
GOOD_LAB = "good/lab"


@dataclass(frozen=True)
class Case:
    id: str
    campaign: str  # corpus-relative paths
    lab: str
    problems: tuple[tuple[str, str, str], ...]  # (corpus-relative file, field, words in the line)
    run: bool = False  # also through `miglab run`
    what: str = ""  # the category (README)


def C(name: str, *problems, run: bool = False, what: str = "") -> Case:
    """A bad campaign (campaigns/NAME.yml) on the good lab; a problem is (field, words) in the
    campaign or (file, field, words)."""
    rel = f"campaigns/{name}.yml"
    return Case(name, rel, GOOD_LAB, _problems(rel, problems), run, what)


def L(name: str, *problems, run: bool = False, what: str = "") -> Case:
    """A bad lab inventory (labs/NAME.yml, or the folder labs/NAME/) for the good campaign; a
    problem is (field, words) in the inventory file or (file, field, words)."""
    folder = (CORPUS / "labs" / name).is_dir()
    rel = f"labs/{name}" if folder else f"labs/{name}.yml"
    default = f"{rel}/hosts.yml" if folder else rel
    return Case(name, GOOD_CAMPAIGN, rel, _problems(default, problems), run, what)


def _problems(default: str, problems) -> tuple:
    return tuple(p if len(p) == 3 else (default, *p) for p in problems)


H = "all.children.esxi_hosts.hosts.esxi-01.lab.example"  # the good lab's one host
VC = "group_vars/all/vcenter.yml"
DRIVER = "group_vars/esxi_hosts/driver.yml"
TOP = "(top)"

CASES = [
    # --- not a campaign at all -----------------------------------------------------------------
    C("c01-empty", (TOP, "file is empty"), run=True, what="empty"),
    C("c02-only-comments", (TOP, "expected one YAML document, found 0"), what="empty"),
    C("c03-list-not-mapping", (TOP, "must be a mapping, got a list"), what="not a mapping"),
    C("c04-scalar-not-mapping", (TOP, "must be a mapping, got a string"), what="not a mapping"),
    # --- unknown keys ----------------------------------------------------------------------------
    C(
        "c05-unknown-top-key",
        ("nmae", "unknown key; did you mean 'name'?"),
        run=True,
        what="unknown key",
    ),
    C(
        "c06-unknown-mlperf-key",
        ("mlperf.run", "did you mean 'runs'?"),
        ("mlperf.runs", "is required"),
        what="unknown key",
    ),
    C(
        "c07-unknown-scenario-key",
        ("scenarios.s2.max_gpu", "did you mean 'max_gpus'?"),
        what="unknown key",
    ),
    # --- duplicate keys ------------------------------------------------------------------------
    C(
        "c08-duplicate-top-key",
        ("name", "duplicate key 'name' (lines 3 and 4)"),
        run=True,
        what="duplicate key",
    ),
    C("c09-duplicate-scenario", ("scenarios.s1", "duplicate key 's1'"), what="duplicate key"),
    C(
        "c10-duplicate-profile-key",
        ("scenarios.s2.vgpus.1g.10gb", "duplicate key '1g.10gb'"),
        what="duplicate key",
    ),
    C(
        "c11-same-vgpu-two-names",
        ("scenarios.s2.vgpus.grid_a100d-1-10c", "listed twice"),
        what="duplicate key",
    ),
    # --- wrong types -----------------------------------------------------------------------------
    C(
        "c12-type-vcpus-string",
        ("vm.vcpus", "must be an integer, got a string 'thirty-two'"),
        run=True,
        what="type",
    ),
    C("c13-type-runs-bool", ("mlperf.runs", "must be an integer, got true or false"), what="type"),
    C("c14-type-runs-float", ("mlperf.runs", "must be an integer, got a number 1.5"), what="type"),
    C("c15-type-benchmarks-string", ("mlperf.benchmarks", "must be a non-empty list"), what="type"),
    C(
        "c16-type-scenarios-list",
        ("scenarios", "must be a non-empty mapping of scenario ids, got a list"),
        ("mlperf.baseline", "is not defined"),
        what="type",
    ),
    C("c17-type-version-string", ("version", "unsupported version 'v1'"), what="type"),
    C("c18-type-mlperf-null", ("mlperf", "must be a mapping, got nothing (null)"), what="type"),
    C("c19-type-parallel-string", ("schedule.parallel", "must be true or false"), what="type"),
    # --- impossible MIG layouts --------------------------------------------------------------
    C(
        "c20-mig-8x-1g-one-gpu",
        ("scenarios.s3.vgpus", "exceeds its maximum of 7 per GPU"),
        run=True,
        what="MIG layout",
    ),
    C(
        "c21-mig-3g-3g-1g-one-gpu",
        ("scenarios.s3.vgpus", "needs 9 memory slices"),
        what="MIG layout",
    ),
    C(
        "c22-mig-unknown-profile",
        ("scenarios.s1.vgpus.5g.50gb", "is not a MIG profile"),
        what="MIG layout",
    ),
    C(
        "c23-mig-profile-of-h200",
        ("scenarios.s2.vgpus.nvidia_h200x-1-18c", "is a vGPU of H200-SXM, not of"),
        run=True,
        what="MIG layout",
    ),
    C(
        "c24-mig-mixed-time-sliced",
        ("scenarios.s2.vgpus", "mixes MIG-backed and time-sliced"),
        what="MIG layout",
    ),
    C(
        "c25-mig-zero-count",
        ("scenarios.s2.vgpus.1g.10gb", "must be at least 1, got 0"),
        what="MIG layout",
    ),
    # --- over-committed hosts ----------------------------------------------------------------
    C(
        "c26-overcommit-vcpus",
        ("scenarios.s3.vgpus", "needs 672 vCPUs, the lab allows 256"),
        run=True,
        what="over-commit",
    ),
    C(
        "c27-overcommit-memory",
        ("scenarios.s3.vgpus", "needs 1400 GB of reserved memory, the lab has 992 GB"),
        what="over-commit",
    ),
    C("c28-vm-larger-than-host", ("scenarios.s1.vgpus", "fits on no GPU/host"), what="over-commit"),
    # --- values ----------------------------------------------------------------------------------
    C("c29-baseline-undefined", ("mlperf.baseline", "scenario 's9' is not defined"), what="value"),
    C("c30-unknown-gpu", ("gpu", "unknown GPU 'B300'"), what="value"),
    C("c31-gpu-not-in-lab", ("gpu", "has no H100-PCIE-80GB"), what="value"),
    C("c32-bad-name", ("name", "'My Lab!' is not valid"), what="value"),
    C(
        "c33-bad-scenario-id",
        ("scenarios.scenario one", "scenario id 'scenario one' must be"),
        what="value",
    ),
    C("c34-mmio-not-power-of-two", ("vm.mmio_gb", "100 is not a power of two"), what="value"),
    C("c35-min-duration-huge", ("mlperf.min_duration_s", "must be at most 604800"), what="value"),
    # --- YAML and bytes ------------------------------------------------------------------------
    C("c36-tabs", (TOP, "line 10, column 1: found character '\\t'"), run=True, what="tabs"),
    C("c37-non-utf8", (TOP, "not UTF-8 text (byte 115: b'\\xe9')"), run=True, what="non-UTF-8"),
    C("c38-utf16", (TOP, "not UTF-8 text (byte 0: b'\\xff')"), what="non-UTF-8"),
    C("c39-control-character", (TOP, "control character #x0007 is not allowed"), what="bytes"),
    C(
        "c40-billion-laughs",
        (TOP, "more than 100000 nodes (alias bomb?)"),
        run=True,
        what="anchors/bombs",
    ),
    C("c41-recursive-anchor", (TOP, "recursive alias at scenarios.loop"), what="anchors/bombs"),
    C(
        "c42-anchor-merge-unknown-key",
        ("scenarios.s1.vcpus", "unknown key"),
        ("scenarios.s1.memory_gb", "unknown key"),
        ("scenarios.s1.mmio_gb", "unknown key"),
        what="anchors/bombs",
    ),
    C("c43-deep-nesting", (TOP, "nested deeper than 64 levels"), what="anchors/bombs"),
    C("c44-two-documents", (TOP, "expected one YAML document, found 2"), what="YAML"),
    C("c45-python-tag", (TOP, "could not determine a constructor for the tag"), what="YAML"),
    C("c46-unhashable-key", (TOP, "found unhashable key"), what="YAML"),
    C(
        "c47-vault-tag",
        (TOP, "could not determine a constructor for the tag '!vault'"),
        what="YAML",
    ),
    # --- lab inventories: structure ------------------------------------------------------------
    L("i01-empty", (TOP, "file is empty"), what="empty"),
    L("i02-list-not-mapping", ("all", "top-level 'all' group is required"), what="not a mapping"),
    L("i03-no-all-group", ("all", "top-level 'all' group is required"), what="not a mapping"),
    L("i04-all-is-list", ("all", "group 'all' must be a mapping"), run=True, what="type"),
    L("i05-children-list", ("all.children", "must be a mapping of group names"), what="type"),
    L("i06-vars-list", ("all.vars", "must be a mapping of variables, got a list"), what="type"),
    L("i07-host-vars-list", (H, "must be a mapping of the host's variables"), what="type"),
    L(
        "i08-unknown-group-key",
        ("all.children.esxi_hosts.host", "did you mean 'hosts'?"),
        run=True,
        what="unknown key",
    ),
    L(
        "i09-unknown-host-var",
        (f"{H}.miglab_host_cpu", "did you mean 'miglab_host_cpus'?"),
        (f"{H}.miglab_host_cpus", "is required"),
        what="unknown key",
    ),
    L("i10-duplicate-host", (H, "duplicate key 'esxi-01.lab.example'"), what="duplicate key"),
    L("i11-duplicate-var", (f"{H}.miglab_host_memory_gb", "duplicate key"), what="duplicate key"),
    # --- lab inventories: host values --------------------------------------------------------
    L(
        "i12-type-cpus-string",
        (f"{H}.miglab_host_cpus", "must be an integer, got a string"),
        what="type",
    ),
    L("i13-type-gpus-mapping", (f"{H}.miglab_host_gpus", "must be a non-empty list"), what="type"),
    L("i14-gpu-count-zero", (f"{H}.miglab_host_gpus[0].count", "at least 1"), what="value"),
    L(
        "i15-unknown-gpu-model",
        (f"{H}.miglab_host_gpus[0].model", "unknown GPU 'A100-PCIE-96GB'"),
        what="value",
    ),
    L("i16-missing-memory", (f"{H}.miglab_host_memory_gb", "is required"), what="value"),
    L(
        "i17-overcommit-below-one",
        (f"{H}.miglab_host_cpu_overcommit", "at least 1.0, got 0.5"),
        what="over-commit",
    ),
    L(
        "i18-overcommit-nan",
        (f"{H}.miglab_host_cpu_overcommit", "must be a finite number"),
        what="over-commit",
    ),
    L(
        "i19-overcommit-inf",
        (f"{H}.miglab_host_cpu_overcommit", "must be a finite number"),
        what="over-commit",
    ),
    L(
        "i20-reserved-exceeds-memory",
        (f"{H}.miglab_host_memory_reserved_gb", "leaves nothing of 1024 GB for VMs"),
        what="over-commit",
    ),
    L(
        "i21-host-too-small",
        (GOOD_CAMPAIGN, "scenarios.s1.vgpus", "fits on no GPU/host"),
        (GOOD_CAMPAIGN, "scenarios.s2.vgpus", "fits on no GPU/host"),
        run=True,
        what="over-commit",
    ),
    L("i22-cpus-huge", (f"{H}.miglab_host_cpus", "must be at most 100000"), what="value"),
    L("i23-no-hosts", ("all.children.esxi_hosts", "no ESXi hosts"), what="value"),
    L("i24-tabs", (TOP, "found character '\\t'"), what="tabs"),
    L("i25-non-utf8", (TOP, "not UTF-8 text (byte 46: b'\\xe9')"), run=True, what="non-UTF-8"),
    L("i26-billion-laughs", (TOP, "alias bomb?"), run=True, what="anchors/bombs"),
    L("i27-int-variable-name", (H, "variable name 42 must be a string"), what="type"),
    # --- lab inventories: vCenter connection (group_vars/all/vcenter.yml) ------------------------
    L(
        "i30-vcenter-no-password",
        (f"labs/i30-vcenter-no-password/{VC}", "miglab_vcenter.password", "set VMWARE_PASSWORD"),
        run=True,
        what="credentials",
    ),
    L(
        "i31-vcenter-no-credentials",
        (f"labs/i31-vcenter-no-credentials/{VC}", "miglab_vcenter.hostname", "is required"),
        (f"labs/i31-vcenter-no-credentials/{VC}", "miglab_vcenter.username", "is required"),
        (f"labs/i31-vcenter-no-credentials/{VC}", "miglab_vcenter.password", "is required"),
        what="credentials",
    ),
    L(
        "i32-vcenter-empty-password",
        (f"labs/i32-vcenter-empty-password/{VC}", "miglab_vcenter.password", "is empty"),
        what="credentials",
    ),
    L(
        "i33-vcenter-password-number",
        (
            f"labs/i33-vcenter-password-number/{VC}",
            "miglab_vcenter.password",
            "must be a string, got an integer (quote it)",
        ),
        what="credentials",
    ),
    L(
        "i34-vcenter-hostname-url",
        (f"labs/i34-vcenter-hostname-url/{VC}", "miglab_vcenter.hostname", "is a URL (https://"),
        run=True,
        what="URL",
    ),
    L(
        "i35-vcenter-hostname-path",
        (f"labs/i35-vcenter-hostname-path/{VC}", "miglab_vcenter.hostname", "has a path"),
        what="URL",
    ),
    L(
        "i36-vcenter-hostname-port",
        (f"labs/i36-vcenter-hostname-port/{VC}", "miglab_vcenter.hostname", "holds a port"),
        what="URL",
    ),
    L(
        "i37-vcenter-hostname-invalid",
        (
            f"labs/i37-vcenter-hostname-invalid/{VC}",
            "miglab_vcenter.hostname",
            "'vcenter lab' is not a valid host name",
        ),
        what="URL",
    ),
    L(
        "i38-vcenter-port-range",
        (f"labs/i38-vcenter-port-range/{VC}", "miglab_vcenter.port", "70000 is not a TCP port"),
        run=True,
        what="URL",
    ),
    L(
        "i39-vcenter-port-type",
        (f"labs/i39-vcenter-port-type/{VC}", "miglab_vcenter.port", "must be an integer"),
        what="URL",
    ),
    L(
        "i40-vcenter-unknown-key",
        (f"labs/i40-vcenter-unknown-key/{VC}", "miglab_vcenter.user", "did you mean 'username'?"),
        (f"labs/i40-vcenter-unknown-key/{VC}", "miglab_vcenter.username", "is required"),
        what="unknown key",
    ),
    L(
        "i41-vcenter-not-mapping",
        (f"labs/i41-vcenter-not-mapping/{VC}", "miglab_vcenter", "must be a mapping of hostname"),
        what="type",
    ),
    L(
        "i42-vcenter-validate-certs",
        (
            f"labs/i42-vcenter-validate-certs/{VC}",
            "miglab_vcenter.validate_certs",
            "must be true or false",
        ),
        what="type",
    ),
    L(
        "i43-vcenter-duplicate-key",
        (f"labs/i43-vcenter-duplicate-key/{VC}", "miglab_vcenter.hostname", "duplicate key"),
        what="duplicate key",
    ),
    # --- lab inventories: the host driver bundle (group_vars/esxi_hosts/driver.yml) -----------
    L(
        "i44-bundle-url-scheme",
        (
            f"labs/i44-bundle-url-scheme/{DRIVER}",
            "esxi_vgpu_driver_bundle_url",
            "scheme 'smb' is not supported",
        ),
        run=True,
        what="URL",
    ),
    L(
        "i45-bundle-url-no-host",
        (f"labs/i45-bundle-url-no-host/{DRIVER}", "esxi_vgpu_driver_bundle_url", "names no host"),
        what="URL",
    ),
    L(
        "i46-bundle-url-port",
        (f"labs/i46-bundle-url-port/{DRIVER}", "esxi_vgpu_driver_bundle_url", "port out of range"),
        what="URL",
    ),
    L(
        "i47-bundle-path-is-url",
        (f"labs/i47-bundle-path-is-url/{DRIVER}", "esxi_vgpu_driver_bundle_path", "is a URL"),
        what="URL",
    ),
    # --- lab inventories: group_vars / host_vars files -----------------------------------------
    L(
        "i48-group-vars-list",
        (
            "labs/i48-group-vars-list/group_vars/esxi_hosts.yml",
            TOP,
            "must be a mapping of variables, got a list",
        ),
        what="not a mapping",
    ),
    L(
        "i49-host-vars-duplicate",
        (
            "labs/i49-host-vars-duplicate/host_vars/esxi-01.lab.example.yml",
            "miglab_host_cpus",
            "duplicate key 'miglab_host_cpus'",
        ),
        what="duplicate key",
    ),
    L(
        "i50-inline-vcenter",
        ("all.vars.miglab_vcenter.hostname", "'http://10.0.0.5' is a URL"),
        ("all.vars.miglab_vcenter.username", "is required"),
        what="credentials",
    ),
]
RUN_CASES = [c for c in CASES if c.run]


@pytest.fixture(autouse=True)
def _no_vmware_environment(monkeypatch):
    """vCenter credentials may come from VMWARE_*: none here, unless a test sets them."""
    for var in ("VMWARE_HOST", "VMWARE_USER", "VMWARE_PASSWORD", "VMWARE_PORT"):
        monkeypatch.delenv(var, raising=False)


def check_invalid(res, problems: list[tuple[Path | str, str, str]]) -> None:
    """Exit 2, nothing on stdout, no traceback, one ``error: FILE: FIELD: reason`` line per
    expected problem and no other line."""
    out = res.stdout + res.stderr
    assert "Traceback" not in out and "internal error" not in out, out
    assert res.returncode == 2, out
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert lines, "no problem reported"
    assert all(line.startswith("error: ") for line in lines), lines
    left = list(lines)
    for file, field, words in problems:
        prefix = f"error: {file}: {field}: "
        hits = [line for line in left if line.startswith(prefix) and words in line]
        assert hits, f"no line {prefix}...{words}... in:\n" + "\n".join(lines)
        left.remove(hits[0])
    assert not left, "unexpected problem lines:\n" + "\n".join(left)


def expected(case: Case) -> list[tuple[Path, str, str]]:
    return [(CORPUS / f, field, words) for f, field, words in case.problems]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate_exits_2_naming_file_and_field(case):
    res = run_cli("validate", CORPUS / case.campaign, "-i", CORPUS / case.lab)
    check_invalid(res, expected(case))


@pytest.mark.parametrize("case", RUN_CASES, ids=[c.id for c in RUN_CASES])
def test_run_stops_before_anything_starts(case, tmp_path):
    artifacts = ROOT / "artifacts"
    before = set(artifacts.glob("*-bad-inputs-good")) if artifacts.is_dir() else set()
    res = run_cli(
        "run", CORPUS / case.campaign, "-i", CORPUS / case.lab, "--results-dir", tmp_path / "r"
    )
    check_invalid(res, expected(case))
    after = set(artifacts.glob("*-bad-inputs-good")) if artifacts.is_dir() else set()
    assert after == before, "miglab run prepared an ansible-runner folder"
    assert not (tmp_path / "r").exists()


# --- generated: too big to commit ---------------------------------------------------------------
GOOD_TEXT = (CORPUS / GOOD_CAMPAIGN).read_text()


def _huge_campaign(tmp_path: Path) -> tuple[Path, str]:
    f = tmp_path / "huge.yml"
    f.write_text(GOOD_TEXT + "# padding\n" * 600_000)  # 6 MB
    return f, TOP


def _many_nodes_campaign(tmp_path: Path) -> tuple[Path, str]:
    f = tmp_path / "many-nodes.yml"  # under 1 MB, but 110,000 list items
    f.write_text(GOOD_TEXT + "description_list:\n" + "- 1\n" * 110_000)
    return f, TOP


@pytest.mark.parametrize(
    "make, words",
    [
        (_huge_campaign, f"file is {len(GOOD_TEXT) + 6_000_000} bytes, larger than the 1000000"),
        (_many_nodes_campaign, "more than 100000 nodes"),
    ],
    ids=["huge-campaign", "many-nodes-campaign"],
)
def test_generated_campaigns(tmp_path, make, words):
    f, field = make(tmp_path)
    res = run_cli("validate", f, "-i", CORPUS / GOOD_LAB)
    check_invalid(res, [(f, field, words)])


def test_huge_inventory_group_vars(tmp_path):
    import shutil

    lab = tmp_path / "lab"
    shutil.copytree(CORPUS / GOOD_LAB, lab)
    big = lab / "group_vars" / "esxi_hosts" / "zz-big.yml"
    big.write_text("miglab_notes: |\n" + "  lorem ipsum dolor sit amet\n" * 80_000)  # 2.2 MB
    res = run_cli("validate", CORPUS / GOOD_CAMPAIGN, "-i", lab)
    check_invalid(res, [(big, TOP, "larger than the 1000000-byte limit")])


def test_huge_inventory_file(tmp_path):
    f = tmp_path / "hosts.yml"
    f.write_bytes((CORPUS / GOOD_LAB / "hosts.yml").read_bytes() + b"#" * 3_000_000)
    res = run_cli("run", CORPUS / GOOD_CAMPAIGN, "-i", f, "--results-dir", tmp_path / "r")
    check_invalid(res, [(f, TOP, "larger than the 1000000-byte limit")])


def test_endless_device_is_not_read_whole():
    """A campaign that never ends (/dev/zero): a device is refused before a byte is read (it was
    read up to the 1 MB limit before; a FIFO blocked forever: tests/unit/test_hostile_inputs.py)."""
    res = run_cli("validate", "/dev/zero", "-i", CORPUS / GOOD_LAB)
    check_invalid(res, [("/dev/zero", TOP, "is a character device, not a regular file")])


def test_campaign_is_a_directory():
    res = run_cli("validate", CORPUS / "campaigns", "-i", CORPUS / GOOD_LAB)
    check_invalid(res, [(CORPUS / "campaigns", TOP, "is a directory")])


def test_campaign_and_lab_problems_together():
    """A bad campaign on a bad lab: the problems of both files, each on its line."""
    res = run_cli(
        "validate",
        CORPUS / "campaigns" / "c05-unknown-top-key.yml",
        "-i",
        CORPUS / "labs" / "i38-vcenter-port-range",
    )
    check_invalid(
        res,
        [
            (CORPUS / "campaigns" / "c05-unknown-top-key.yml", "nmae", "unknown key"),
            (
                CORPUS / "labs" / "i38-vcenter-port-range" / VC,
                "miglab_vcenter.port",
                "not a TCP port",
            ),
        ],
    )


# --- what must stay accepted --------------------------------------------------------------------
@pytest.mark.parametrize(
    "lab, env",
    [
        (GOOD_LAB, {}),  # vault-encrypted password (!vault), https bundle URL
        ("good/lab-templated", {}),  # templates and a vault-encrypted vault.yml
        ("good/lab-env-password", {"VMWARE_PASSWORD": "from-the-environment"}),
        (
            "labs/i31-vcenter-no-credentials",
            {"VMWARE_HOST": "vcenter.lab.example", "VMWARE_USER": "u", "VMWARE_PASSWORD": "p"},
        ),
    ],
    ids=["vault-value", "templates", "password-from-env", "all-credentials-from-env"],
)
def test_good_labs_are_accepted(monkeypatch, lab, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    res = run_cli("validate", CORPUS / GOOD_CAMPAIGN, "-i", CORPUS / lab)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "" and res.stdout.startswith("ok: ")


def test_messages_never_show_the_password():
    res = run_cli(
        "validate", CORPUS / GOOD_CAMPAIGN, "-i", CORPUS / "labs" / "i33-vcenter-password-number"
    )
    assert res.returncode == 2 and "12345678" not in res.stderr + res.stdout


# --- the corpus, its table and its README agree ------------------------------------------------
def test_corpus_is_large_enough_and_fully_used():
    campaigns = [c for c in CASES if c.campaign != GOOD_CAMPAIGN]
    labs = [c for c in CASES if c.lab != GOOD_LAB]
    assert len(campaigns) >= 25 and len(labs) >= 15 and len(CASES) >= 40
    used = {c.campaign for c in CASES} | {c.lab for c in CASES}
    on_disk = {
        str(p.relative_to(CORPUS))
        for folder in ("campaigns", "labs")
        for p in (CORPUS / folder).iterdir()
    }
    assert on_disk == used - {GOOD_CAMPAIGN, GOOD_LAB}
    readme = (CORPUS / "README.md").read_text()
    for c in CASES:
        assert re.search(rf"`{re.escape(c.id)}", readme), f"{c.id} is not in README.md"
