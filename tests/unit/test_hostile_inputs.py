"""Hostile inputs (issue 14): files that are no files, files miglab was not asked to print, huge
or amplified inputs, names that would be paths or commands, and values that crashed a command.
Every case: exit 2, one clear line naming the file and the field, nothing of a file it was not
asked to show, bounded output, no traceback, never ``internal error``, never a hang.

The campaign and lab are the bad-input corpus's good pair (tests/fixtures/bad-inputs/good), each
case changing one thing in a copy in tmp_path. FIFOs, devices, symlinks and huge files are made
at test time. Cases that could block (a FIFO, a device) run the real CLI in a subprocess with a
timeout, so a hang fails the test instead of stopping the suite; the others call the CLI's
``main`` in this process (the same code, a hundred times faster)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testlib import FIXTURES

pytestmark = pytest.mark.unit

GOOD = FIXTURES / "bad-inputs" / "good"
CAPTURE = FIXTURES / "nvidia-smi" / "a100-sxm4-40gb-mig-lgip.txt"
CAPTURE_LGIPP = FIXTURES / "nvidia-smi" / "a100-sxm4-40gb-mig-lgipp.txt"
SECRET = "Sekr3t-MIGLAB-0c9a1f"  # a file's content that must never reach the output
MAX_OUT = 64 * 1024  # what a refusal may print at most (50 problems of ~500 characters + a count)


def _cli(*args, env: dict | None = None, timeout: float = 60):
    """(exit code, stdout, stderr) of ``miglab ARGS``: in a subprocess when ``timeout`` is given
    for a case that could block, else in this process."""
    argv = [str(a) for a in args]
    if env is not None or timeout != 60:
        full = {k: v for k, v in os.environ.items() if not k.startswith(("VMWARE_", "MIGLAB_"))}
        res = subprocess.run([sys.executable, "-m", "miglab.cli", *argv], capture_output=True,
                             text=True, timeout=timeout, env={**full, **(env or {})})  # fmt: skip
        return res.returncode, res.stdout, res.stderr
    from miglab.cli.commands import main

    # streams with a .buffer, as real ones have (Ansible's display patches them at import)
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code
    out.flush()
    err.flush()
    return rc, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()


def _refused(result, *words: str, file: str | Path | None = None) -> str:
    rc, out, err = result
    assert rc == 2, (rc, out[-2000:], err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    assert len(out) + len(err) <= MAX_OUT, len(out) + len(err)
    assert err.strip(), "no reason given"
    for line in err.strip().splitlines():
        assert line.startswith("error: "), line
    for w in words:
        assert w in err, (w, err[-3000:])
    if file is not None:
        assert f"error: {file}: " in err or f": {file}: " in err, err[-3000:]
    return err


@pytest.fixture
def lab(tmp_path) -> Path:
    folder = tmp_path / "lab"
    shutil.copytree(GOOD / "lab", folder)
    return folder


@pytest.fixture
def campaign(tmp_path) -> Path:
    f = tmp_path / "campaign.yml"
    shutil.copyfile(GOOD / "campaign.yml", f)
    return f


def _campaign_with(tmp_path: Path, **top) -> Path:
    data = yaml.safe_load((GOOD / "campaign.yml").read_text())
    for key, value in top.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    f = tmp_path / "edited.yml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return f


def _vcenter(lab: Path, **changes) -> Path:
    f = lab / "group_vars" / "all" / "vcenter.yml"
    text = f.read_text()
    data = yaml.safe_load(text.replace("!vault |", "|"))
    data["miglab_vcenter"].update(changes)
    data["miglab_vcenter"]["password"] = "{{ vault_vcenter_password }}"
    f.write_text(yaml.safe_dump(data))
    return f


def _driver(lab: Path, url: str) -> Path:
    f = lab / "group_vars" / "esxi_hosts" / "driver.yml"
    data = yaml.safe_load(f.read_text())
    data["esxi_vgpu_driver_bundle_url"] = url
    f.write_text(yaml.safe_dump(data))
    return f


def _secret_file(tmp_path: Path, kind: str) -> Path:
    """Files a campaign might name as its capture that are no capture and hold a secret."""
    f = tmp_path / f"secret-{kind}"
    body = {
        "passwd": f"root:x:0:0:root:/root:/bin/bash\nsvc:{SECRET}:1000:1000::/home/svc:/bin/sh\n",
        "vcsim-json": '{"hostname": "127.0.0.1", "port": 443, "username": "user", '
        f'"password": "{SECRET}"}}\n',
        "yaml": f"miglab_vcenter:\n  password: {SECRET}\n",
        "ini": f"[defaults]\nvault_password = {SECRET}\n",
        "one-line": SECRET,
        "pem": f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n",
        "table-lookalike": f"| {SECRET} |\n+--------+\n| not a profile table {SECRET} |\n",
        "shell-history": f"export VMWARE_PASSWORD={SECRET}\nls\n",
    }[kind]
    f.write_text(body)
    return f


# --- 1. files that are no regular files: refused before a byte is read, never a hang ---------
def _special(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "fifo-symlink":
        os.mkfifo(tmp_path / "the-fifo")
        p.symlink_to(tmp_path / "the-fifo")
    elif kind == "dev-zero-symlink":
        p.symlink_to("/dev/zero")
    elif kind == "dev-null-symlink":
        p.symlink_to("/dev/null")
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "folder":
        p.mkdir()
    return p


SPECIAL = ["fifo", "fifo-symlink", "dev-zero-symlink", "dev-null-symlink", "socket", "folder"]
WHY = {"fifo": "is a FIFO", "fifo-symlink": "is a FIFO", "dev-zero-symlink": "character device",
       "dev-null-symlink": "character device", "socket": "not a regular file",
       "folder": "is a directory"}  # fmt: skip


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_campaign_that_is_no_file_is_refused_unread(kind, tmp_path, lab):
    p = _special(tmp_path, kind)
    _refused(_cli("validate", p, "-i", lab, timeout=30), WHY[kind], file=p)


@pytest.mark.parametrize("kind", SPECIAL[:-1])  # a folder is an inventory folder
def test_an_inventory_that_is_no_file_is_refused_unread(kind, tmp_path, campaign):
    p = _special(tmp_path, kind)
    _refused(_cli("validate", campaign, "-i", p, timeout=30), WHY[kind])


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_gpu_capture_that_is_no_file_is_refused_unread(kind, tmp_path, lab):
    p = _special(tmp_path, kind)
    c = _campaign_with(tmp_path, gpu="captured-gpu", gpu_capture=str(p))
    _refused(_cli("validate", c, "-i", lab, timeout=30), "gpu_capture", WHY[kind])


@pytest.mark.parametrize("kind", SPECIAL)
def test_gpu_import_mig_of_a_capture_that_is_no_file(kind, tmp_path):
    p = _special(tmp_path, kind)
    _refused(_cli("gpu", "import-mig", p, timeout=30), WHY[kind], file=p)


@pytest.mark.parametrize("kind", SPECIAL)
def test_gpu_inspect_of_a_file_that_is_no_file(kind, tmp_path):
    p = _special(tmp_path, kind)
    _refused(_cli("gpu", "inspect", p, timeout=30), WHY[kind], file=p)


@pytest.mark.parametrize("kind", SPECIAL)
def test_from_mig_parted_of_a_file_that_is_no_file(kind, tmp_path):
    p = _special(tmp_path, kind)
    _refused(_cli("gpu", "from-mig-parted", p, "--gpu", "A100-PCIE-80GB", timeout=30), WHY[kind])


@pytest.mark.parametrize("what", ["campaign", "capture", "inspect", "mig-parted"])
def test_a_huge_input_is_refused_without_reading_it_whole(what, tmp_path, lab):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: 50 MB that cost no disk
    args = {
        "campaign": ("validate", big, "-i", lab),
        "capture": ("gpu", "import-mig", big),
        "inspect": ("gpu", "inspect", big),
        "mig-parted": ("gpu", "from-mig-parted", big, "--gpu", "A100-PCIE-80GB"),
    }[what]
    _refused(_cli(*args), "larger than the 1000000-byte limit")


@pytest.mark.parametrize("what", ["capture", "inspect", "mig-parted"])
def test_a_text_input_that_is_not_utf8(what, tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"GPU 0: NVIDIA A100 \xe9\xff\n")
    args = {
        "capture": ("gpu", "import-mig", bad),
        "inspect": ("gpu", "inspect", bad),
        "mig-parted": ("gpu", "from-mig-parted", bad, "--gpu", "A100-PCIE-80GB"),
    }[what]
    _refused(_cli(*args), "not UTF-8")


# --- 2. a file it was not asked to print is never printed ------------------------------------
SECRET_KINDS = ["passwd", "vcsim-json", "yaml", "ini", "one-line", "pem", "table-lookalike",
                "shell-history"]  # fmt: skip


@pytest.mark.parametrize("kind", SECRET_KINDS)
def test_a_gpu_capture_naming_another_file_never_shows_it(kind, tmp_path, lab):
    secret = _secret_file(tmp_path, kind)
    c = _campaign_with(tmp_path, gpu="captured-gpu", gpu_capture=str(secret))
    err = _refused(_cli("validate", c, "-i", lab), "gpu_capture")
    assert SECRET not in err


@pytest.mark.parametrize("kind", SECRET_KINDS)
def test_gpu_import_mig_of_another_file_never_shows_it(kind, tmp_path):
    secret = _secret_file(tmp_path, kind)
    err = _refused(_cli("gpu", "import-mig", secret))
    assert SECRET not in err


def test_report_of_a_campaign_whose_capture_is_another_file_never_shows_it(tmp_path):
    secret = _secret_file(tmp_path, "passwd")
    c = _campaign_with(tmp_path, gpu="captured-gpu", gpu_capture=str(secret))
    results = tmp_path / "results"
    results.mkdir()
    rc, out, err = _cli("report", results, "--campaign", c, "-o", tmp_path / "out")
    assert rc == 2 and SECRET not in out + err and "internal error" not in err, err


def test_a_real_capture_still_reports_its_own_bad_lines(tmp_path):
    """The capture check does not hide a real capture's problems: they name the line."""
    text = CAPTURE.read_text().replace("MIG 1g.5gb ", "MIG 1x.5gb ", 1)
    f = tmp_path / "capture.txt"
    f.write_text(text + CAPTURE_LGIPP.read_text())
    _refused(_cli("gpu", "import-mig", f), "line ", "not a MIG profile name")


def test_a_capture_with_an_empty_placement_list_is_refused(tmp_path):
    lgipp = CAPTURE_LGIPP.read_text().splitlines()
    first = next(i for i, line in enumerate(lgipp) if "Placements" in line)
    lgipp[first] = lgipp[first].split("Placements")[0] + "Placements: {}:1"
    f = tmp_path / "capture.txt"
    f.write_text(CAPTURE.read_text() + "\n".join(lgipp) + "\n")
    _refused(_cli("gpu", "import-mig", f), "placements")


# --- 3. output stays bounded, whatever the input amplifies ------------------------------------
def _amplified(tmp_path: Path, kind: str) -> Path:
    big = "x" * 200_000
    head = (GOOD / "campaign.yml").read_text().split("scenarios:")[0]
    lines = [head.replace("description: reference campaign of the bad-input corpus",
                          f"description: &big {big}"), "scenarios:"]  # fmt: skip
    lines.append("  s1: {vgpus: {7g.80gb: 1}}")
    for i in range(2, 800):
        lines.append({
            "alias-as-int": f"  s{i}: {{vgpus: {{7g.80gb: 1}}, max_gpus: *big}}",
            "alias-as-key": f"  s{i}: {{vgpus: {{7g.80gb: 1}}, *big : 1}}",
            "alias-as-profile": f"  s{i}: {{vgpus: {{*big : 1}}}}",
            "unknown-keys": f"  s{i}: {{vgpus: {{7g.80gb: 1}}, nmae{i}: 1}}",
            "bad-counts": f"  s{i}: {{vgpus: {{7g.80gb: -{i}}}}}",
        }[kind])  # fmt: skip
    f = tmp_path / f"{kind}.yml"
    f.write_text("\n".join(lines) + "\n")
    return f


@pytest.mark.parametrize(
    "kind", ["alias-as-int", "alias-as-key", "alias-as-profile", "unknown-keys", "bad-counts"]
)
def test_many_problems_print_at_most_fifty_lines_and_a_count(kind, tmp_path, lab):
    f = _amplified(tmp_path, kind)
    err = _refused(_cli("validate", f, "-i", lab))
    lines = err.strip().splitlines()
    assert len(lines) <= 51 and all(len(line) <= 1200 for line in lines), len(lines)
    if len(lines) == 51:
        assert lines[-1].startswith("error: ... and ") and lines[-1].endswith(" more problems")


def test_one_huge_value_is_cut_in_its_message(tmp_path, lab):
    c = _campaign_with(tmp_path, name="n" * 500_000)
    err = _refused(_cli("validate", c, "-i", lab), "more characters")
    assert len(err) < 5000


def test_a_huge_key_gets_no_slow_did_you_mean(tmp_path, lab):
    data = yaml.safe_load((GOOD / "campaign.yml").read_text())
    data["k" * 300_000] = 1
    f = tmp_path / "key.yml"
    f.write_text(yaml.safe_dump(data))
    _refused(_cli("validate", f, "-i", lab, timeout=30), "unknown key")


# --- 4. host, group and vCenter names that would be paths or commands -------------------------
BAD_HOST_NAMES = ["esxi;reboot", "../../etc/passwd", "a/b.lab.example", "$(id).lab.example",
                  "`id`.lab.example", "esxi 01", "esxi|01", "-oProxyCommand=x", "esxi\\01",
                  "esxi&01", "esxi>01", "esxi*", "esxi'01", 'esxi"01', "..", "esxi\t01",
                  "ésxi.lab.example", "esxi#01"]  # fmt: skip


@pytest.mark.parametrize("name", BAD_HOST_NAMES)
def test_an_esxi_host_name_that_is_no_name_is_refused(name, lab, campaign):
    hosts = lab / "hosts.yml"
    data = yaml.safe_load(hosts.read_text())
    h = data["all"]["children"]["esxi_hosts"]["hosts"]
    h[name] = h.pop("esxi-01.lab.example")
    hosts.write_text(yaml.safe_dump(data))
    _refused(_cli("validate", campaign, "-i", lab), "host name", "letters, digits")


@pytest.mark.parametrize("name", ["rack/1", "../group_vars", "rack;1", "rack 1"])
def test_a_group_name_that_is_no_name_is_refused(name, lab, campaign):
    hosts = lab / "hosts.yml"
    data = yaml.safe_load(hosts.read_text())
    esxi = data["all"]["children"]["esxi_hosts"]
    esxi["children"] = {name: {"hosts": esxi.pop("hosts")}}
    hosts.write_text(yaml.safe_dump(data))
    _refused(_cli("validate", campaign, "-i", lab), "group name")


def test_a_host_range_is_still_a_name(lab, campaign):
    hosts = lab / "hosts.yml"
    data = yaml.safe_load(hosts.read_text())
    h = data["all"]["children"]["esxi_hosts"]["hosts"]
    h["esxi-[01:02].lab.example"] = h.pop("esxi-01.lab.example")
    hosts.write_text(yaml.safe_dump(data))
    rc, out, err = _cli("validate", campaign, "-i", lab)
    assert rc == 0 and "2 host(s)" in out, err


BAD_VCENTER_HOSTNAMES = [
    ("vcenter.lab.example\r\nX-Injected: 1", "control characters"),
    ("fe80::1%eth0\r\n", "control characters"),
    ("fe80::1%eth0\nvcenter", "control characters"),
    ("fe80::1%eth0/../x", "has a path"),
    ("fe80::1%eth 0", "white space"),
    ("fe80::1%e$th0", "invalid IPv6 zone"),
    ("192.0.2.1%eth0", "invalid IPv6 zone"),
    ("vcenter\x00.lab.example", "control characters"),
    ("vcenter\u2003lab", "white space"),
    ("admin@vcenter.lab.example", "holds a user"),
    ("vcenter.lab.example\\sdk", "has a path"),
    ("[fe80::1", "not a valid host name"),
]


@pytest.mark.parametrize(("hostname", "why"), BAD_VCENTER_HOSTNAMES)
def test_a_vcenter_hostname_that_is_no_host_is_refused(hostname, why, lab, campaign):
    _vcenter(lab, hostname=hostname)
    err = _refused(_cli("validate", campaign, "-i", lab), "miglab_vcenter.hostname", why)
    assert "X-Injected: 1\n" not in err


def test_a_scoped_ipv6_vcenter_is_accepted(lab, campaign):
    _vcenter(lab, hostname="fe80::1%eth0")
    rc, _, err = _cli("validate", campaign, "-i", lab)
    assert rc == 0, err


@pytest.mark.parametrize(
    "url",
    [f"https://administrator:{SECRET}@vcenter.lab.example/sdk",
     f"https://{SECRET}@vcenter.lab.example", f"http://user:{SECRET}@[fe80::1/sdk"],
)  # fmt: skip
def test_a_vcenter_url_with_credentials_never_shows_them(url, lab, campaign):
    _vcenter(lab, hostname=url)
    err = _refused(_cli("validate", campaign, "-i", lab), "miglab_vcenter.hostname", "***@")
    assert SECRET not in err


@pytest.mark.parametrize(
    ("value", "why"),
    [("https://vcenter.lab.example/sdk", "is a URL"), ("vcenter.lab.example/sdk", "has a path"),
     (f"https://root:{SECRET}@vcenter.lab.example", "is a URL"),
     ("vcenter\r\nlab", "control characters")],
)  # fmt: skip
def test_vmware_host_from_the_environment_is_checked_too(value, why, lab, campaign):
    f = lab / "group_vars" / "all" / "vcenter.yml"
    data = yaml.safe_load(f.read_text().replace("!vault |", "|"))
    del data["miglab_vcenter"]["hostname"]
    f.write_text(yaml.safe_dump(data))
    err = _refused(_cli("validate", campaign, "-i", lab, env={"VMWARE_HOST": value}),
                   "from VMWARE_HOST", why)  # fmt: skip
    assert SECRET not in err


# --- 5. values that crashed a command ----------------------------------------------------------
@pytest.mark.parametrize("port", ["４４３", "٤٤٣", "²", "443\u00b2", "0x1bb", "1e3", "-443",
                                  "99999", "0"])  # fmt: skip
def test_a_port_that_is_no_ascii_number_is_refused(port, lab, campaign):
    _vcenter(lab, port=port)
    _refused(_cli("validate", campaign, "-i", lab), "miglab_vcenter.port")


def test_a_port_with_surrounding_space_is_still_a_port(lab, campaign):
    _vcenter(lab, port=" 443")
    rc, _, err = _cli("validate", campaign, "-i", lab)
    assert rc == 0, err


@pytest.mark.parametrize(
    ("url", "why"),
    [("http://[::1/nvidia.zip", "not a valid URL"), ("https://mirror:99999/n.zip", "port out of"),
     ("https://mirror:abc/n.zip", "not a valid URL"), ("https://[vcenter]/n.zip", "not a valid"),
     ("https://mirror/n.zip\r\nHost: x", "control characters"), ("https://mirror/", "names no"),
     (f"https://u:{SECRET}@mirror:99999/n.zip", "port out of"),
     (f"https://u:{SECRET}@[::1/n.zip", "not a valid URL"),
     (f"ftp://{SECRET}@/n.zip", "names no host")],
)  # fmt: skip
def test_a_malformed_bundle_url_is_refused_without_its_credentials(url, why, lab, campaign):
    _driver(lab, url)
    err = _refused(_cli("validate", campaign, "-i", lab), "esxi_vgpu_driver_bundle_url", why)
    assert SECRET not in err


@pytest.mark.parametrize("where", ["folder", "missing-parent", "fifo"])
def test_mig_parted_output_that_cannot_be_a_file(where, tmp_path, lab, campaign):
    out = {"folder": tmp_path, "missing-parent": tmp_path / "no" / "such" / "x.yaml",
           "fifo": _special(tmp_path, "fifo")}[where]  # fmt: skip
    _refused(_cli("gpu", "mig-parted", campaign, "-i", lab, "-o", out, timeout=30), "-o")


@pytest.mark.parametrize(
    "name", ["[/x]", "[bold]", "lab[/bold]", "[link=file:///etc/passwd]x[/link]"]
)
def test_rich_markup_in_a_path_prints_as_it_is(name, tmp_path, lab):
    c = tmp_path / f"{name.replace('/', '_')}.yml"
    shutil.copyfile(GOOD / "campaign.yml", c)
    rc, out, err = _cli("plan", c, "-i", lab)
    assert rc == 0, err
    assert f"({c})" in out  # printed literally, not taken as markup


def test_rich_markup_in_a_captured_gpu_name_prints_as_it_is(tmp_path):
    f = tmp_path / "capture.txt"
    f.write_text(CAPTURE.read_text() + CAPTURE_LGIPP.read_text())
    rc, out, err = _cli("gpu", "import-mig", f, "--name", "gpu[/x]")
    assert rc == 0, err
    assert "gpu[/x]" in out
