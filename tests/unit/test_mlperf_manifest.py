"""Atomic result files, MANIFEST.sha256 and ``miglab results verify`` (miglab/formats/manifest.py).

Run folders are copies of Dell's real MLPerf v1.1 R750xa ResNet50 Offline logs
(tests/fixtures/mlperf); each test tampers with one thing and checks that exactly that is found.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from miglab.errors import ValidationError
from miglab.formats import manifest as mf
from miglab.formats.manifest import (
    MANIFEST,
    atomic_copy,
    atomic_write_bytes,
    atomic_write_text,
    read_manifest,
    replace_dir,
    sha256_file,
    verify_run,
    verify_tree,
    write_if_changed,
    write_manifest,
)
from testlib import FIXTURES, ROOT, run_cli

DELL_RUN = (
    FIXTURES
    / "mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50/Offline/performance/run_1"
)


def make_run(vm_dir, n=1, manifest=True):
    run = vm_dir / "resnet50" / "Offline" / "performance" / f"run_{n}"
    run.mkdir(parents=True)
    for f in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
        shutil.copy(DELL_RUN / f, run / f)
    (run / "miglab_run.json").write_text(json.dumps({"schema": "miglab-run/1", "run": n}) + "\n")
    if manifest:
        write_manifest(run)
    return run


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "results" / "camp"
    runs = [make_run(root / "s1" / "vm1", n) for n in (1, 2)]
    runs.append(make_run(root / "s6" / "vm2", 1))
    return root, runs


def kinds(report):
    return [(i.kind, i.path) for i in report.issues]


# --- atomic writes -------------------------------------------------------------------------------
def test_atomic_write_replaces_and_leaves_nothing(tmp_path):
    p = tmp_path / "sub" / "f.json"
    atomic_write_text(p, "one\n")
    assert p.read_text() == "one\n"
    mode = stat.S_IMODE(p.stat().st_mode)
    assert mode & 0o600 == 0o600 and not mode & 0o022 & ~_umask()
    os.chmod(p, 0o640)
    atomic_write_bytes(p, b"two\n")
    assert p.read_bytes() == b"two\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o640  # the old file's mode is kept
    assert sorted(x.name for x in p.parent.iterdir()) == ["f.json"]


def _umask():
    m = os.umask(0o022)
    os.umask(m)
    return m


def test_interrupted_atomic_write_keeps_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "miglab_run.json"
    p.write_text("old\n")

    def boom(*_a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mf.os, "replace", boom)
    with pytest.raises(OSError, match="No space"):
        atomic_write_text(p, "new\n")
    assert p.read_text() == "old\n"
    assert [x.name for x in tmp_path.iterdir()] == ["miglab_run.json"]  # temp file removed


def test_atomic_copy_keeps_times(tmp_path):
    src = DELL_RUN / "mlperf_log_detail.txt"
    dst = atomic_copy(src, tmp_path / "d" / "detail.txt")
    assert dst.read_bytes() == src.read_bytes()
    assert int(dst.stat().st_mtime) == int(src.stat().st_mtime)


def test_write_if_changed(tmp_path):
    p = tmp_path / "r.md"
    assert write_if_changed(p, b"a") is True
    before = p.stat().st_ino
    assert write_if_changed(p, b"a") is False
    assert p.stat().st_ino == before  # not rewritten
    assert write_if_changed(p, b"b") is True and p.read_bytes() == b"b"


# --- the manifest --------------------------------------------------------------------------------
def test_manifest_is_sha256sum_format(tmp_path):
    run = make_run(tmp_path / "vm1")
    (run / "sub").mkdir()
    (run / "sub" / "z.txt").write_text("z\n")
    (run / ".miglab_run.json.abc.miglab-tmp").write_text("junk")  # never listed
    write_manifest(run)
    lines = (run / MANIFEST).read_text().splitlines()
    names = [line.split("  ", 1)[1] for line in lines]
    want = ["miglab_run.json", "mlperf_log_detail.txt", "mlperf_log_summary.txt", "sub/z.txt"]
    assert names == want
    assert lines[1] == f"{sha256_file(run / 'mlperf_log_detail.txt')}  mlperf_log_detail.txt"
    if shutil.which("sha256sum"):
        (run / ".miglab_run.json.abc.miglab-tmp").unlink()
        out = subprocess.run(
            ["sha256sum", "--strict", "-c", MANIFEST], cwd=run, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stdout + out.stderr


def test_odd_names_round_trip(tmp_path):
    run = tmp_path / "run_1"
    run.mkdir()
    for name in ("a b.txt", "back\\slash", "new\nline"):
        (run / name).write_text(name)
    write_manifest(run)
    listed, bad = read_manifest(run / MANIFEST)
    assert not bad and set(listed) == {"a b.txt", "back\\slash", "new\nline"}
    assert verify_run(run) == []


def test_good_tree_verifies(tree):
    root, runs = tree
    (root / "report").mkdir()
    (root / "report" / "report.md").write_text("# report\n")  # outside run folders: not checked
    report = verify_tree(root.parent)
    assert report.ok and report.issues == []
    assert report.runs == [str(r) for r in sorted(runs)]
    assert report.files == 9
    assert verify_tree(runs[0]).ok  # one run folder


def test_tampered_deleted_added_files(tree):
    root, (r1, r2, r3) = tree
    detail = r1 / "mlperf_log_detail.txt"
    detail.write_bytes(detail.read_bytes().replace(b"VALID", b"INVALID", 1))
    (r2 / "mlperf_log_summary.txt").unlink()
    (r3 / "extra.txt").write_text("added after the manifest\n")
    report = verify_tree(root)
    assert kinds(report) == [
        ("checksum", str(detail)),
        ("missing", str(r2 / "mlperf_log_summary.txt")),
        ("unlisted", str(r3 / "extra.txt")),
    ]
    assert [str(i) for i in report.issues] == [
        f"{detail}: checksum differs from MANIFEST.sha256",
        f"{r2 / 'mlperf_log_summary.txt'}: listed in MANIFEST.sha256 but missing",
        f"{r3 / 'extra.txt'}: not listed in MANIFEST.sha256",
    ]


def test_missing_and_bad_manifest(tree, tmp_path):
    root, (r1, r2, _r3) = tree
    (r1 / MANIFEST).unlink()
    with (r2 / MANIFEST).open("a") as f:
        f.write("not a checksum line\n")
    report = verify_tree(root)
    assert kinds(report) == [("no-manifest", str(r1)), ("bad-manifest", str(r2 / MANIFEST))]
    assert "line 4: not '<sha256>  <path>'" in str(report.issues[1])
    # an unfinished run (a folder made, nothing written yet) has no manifest either
    bare = make_run(tmp_path / "other" / "vm9", manifest=False)
    assert [i.kind for i in verify_run(bare)] == ["no-manifest"]


def test_interrupted_writes_and_fetches_are_found(tree):
    root, (r1, _r2, _r3) = tree
    tmp_in_run = r1 / ".miglab_run.json.k2j3.miglab-tmp"
    tmp_in_run.write_text('{"half": ')
    report_dir = root / "report"
    report_dir.mkdir()
    tmp_report = report_dir / ".report.html.x1.miglab-tmp"
    tmp_report.write_text("<html")
    perf = r1.parent
    stage = perf / "run_3.fetch-20260105T100000.123456Z"
    shutil.copytree(r1, stage / "run_3")
    report = verify_tree(root)
    assert kinds(report) == [  # sorted by path
        ("temp-file", str(tmp_report)),
        ("temp-file", str(tmp_in_run)),
        ("staging", str(stage)),
    ]
    assert "leftover temporary file of an interrupted write" in str(report.issues[0])
    assert "leftover of an interrupted fetch" in str(report.issues[2])


def test_empty_tree_and_missing_folder(tmp_path):
    report = verify_tree(tmp_path)
    assert [i.kind for i in report.issues] == ["empty"]
    with pytest.raises(ValidationError, match="no such directory"):
        verify_tree(tmp_path / "nope")


# --- swapping a run folder in --------------------------------------------------------------------
def test_replace_dir_swaps_and_removes_the_old(tmp_path):
    new_run = make_run(tmp_path / "stage")
    dest = make_run(tmp_path / "results", manifest=False)
    (dest / "old-only.txt").write_text("old")
    replace_dir(new_run, dest, tmp_path / "stage" / "replaced")
    assert verify_run(dest) == [] and not (dest / "old-only.txt").exists()
    assert not new_run.exists() and not (tmp_path / "stage" / "replaced").exists()
    # no old folder: just a rename
    other = make_run(tmp_path / "stage2")
    dest2 = tmp_path / "results2" / "run_1"
    dest2.parent.mkdir()
    replace_dir(other, dest2, tmp_path / "aside")
    assert verify_run(dest2) == []


def test_replace_dir_failure_keeps_the_old_folder(tmp_path, monkeypatch):
    new_run = make_run(tmp_path / "stage")
    dest = make_run(tmp_path / "results")
    old = (dest / "miglab_run.json").read_text()
    real_rename = os.rename
    calls = []

    def flaky(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the new folder cannot be renamed in
            raise OSError(18, "Invalid cross-device link")
        return real_rename(src, dst)

    monkeypatch.setattr(mf.os, "rename", flaky)
    with pytest.raises(OSError, match="cross-device"):
        replace_dir(new_run, dest, tmp_path / "aside")
    assert (dest / "miglab_run.json").read_text() == old and verify_run(dest) == []
    assert new_run.is_dir() and not (tmp_path / "aside").exists()
    with pytest.raises(FileExistsError):
        replace_dir(new_run, dest, dest)


def test_module_command_line(tmp_path):
    """`python -m miglab.formats.manifest write|replace`, as the mlperf role's fetch runs it."""
    run = make_run(tmp_path / "stage", manifest=False)
    py = [sys.executable, "-m", "miglab.formats.manifest"]
    out = subprocess.run([*py, "write", str(run)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout == f"wrote {run / MANIFEST}\n"
    assert out.stderr == ""  # no runpy warning about a module imported twice
    dest = tmp_path / "results" / "run_1"
    dest.parent.mkdir()
    out = subprocess.run(
        [*py, "replace", str(run), str(dest), str(tmp_path / "aside")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert verify_run(dest) == []
    out = subprocess.run([*py, "write", str(tmp_path / "nope")], capture_output=True, text=True)
    assert out.returncode == 2 and "no such folder" in out.stderr


# --- miglab results verify -----------------------------------------------------------------------
def test_cli_verify_ok_problems_and_missing(tree):
    root, (r1, _r2, _r3) = tree
    out = run_cli("results", "verify", root)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == "ok: 3 run folder(s), 9 file(s) match their manifests\n"
    data = json.loads(run_cli("results", "verify", root, "--json").stdout)
    assert (data["ok"], data["runs"], data["files"], data["problems"]) == (True, 3, 9, [])

    (r1 / "mlperf_log_summary.txt").write_text("changed\n")
    (r1 / "new.txt").write_text("new\n")
    out = run_cli("results", "verify", root)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"{r1 / 'mlperf_log_summary.txt'}: checksum differs from MANIFEST.sha256",
        f"{r1 / 'new.txt'}: not listed in MANIFEST.sha256",
    ]
    assert "2 problem(s)" in out.stderr
    out = run_cli("results", "verify", root, "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert not data["ok"] and [p["kind"] for p in data["problems"]] == ["checksum", "unlisted"]

    out = run_cli("results", "verify", root / "nope")
    assert out.returncode == 2 and "no such directory" in out.stderr


def test_install_fetched_swaps_a_packed_run_in_and_refuses_a_bad_one(tmp_path):
    """The controller's side of the fetch in one call: unpack into a staging folder, check the
    manifest, swap in; a run whose files do not match leaves the old folder as it was."""
    from miglab.formats.manifest import FetchRefused, install_fetched
    from miglab.mlperf.guest.run import pack

    guest = tmp_path / "guest" / "run_2"
    guest.mkdir(parents=True)
    (guest / "mlperf_log_detail.txt").write_text("new\n")
    write_manifest(guest)
    dest = tmp_path / "results" / "vm1" / "resnet50" / "Offline" / "performance" / "run_2"
    dest.mkdir(parents=True)
    (dest / "old.txt").write_text("old\n")
    write_manifest(dest)
    tarball = pack(guest, tmp_path / "cache" / "run.tar.gz")
    assert install_fetched(tarball, dest) == {"dest": str(dest), "wrote_manifest": False}
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "mlperf_log_detail.txt"]
    assert verify_tree(tmp_path / "results").ok
    (guest / "mlperf_log_detail.txt").write_text("changed after the manifest\n")
    pack(guest, tarball)
    with pytest.raises(FetchRefused, match="left as it was"):
        install_fetched(tarball, dest)
    assert (dest / "mlperf_log_detail.txt").read_text() == "new\n"
    assert len(list(dest.parent.glob("run_2.fetch-*"))) == 1  # kept for a look ...
    (guest / "mlperf_log_detail.txt").write_text("newer\n")
    write_manifest(guest)
    install_fetched(pack(guest, tarball), dest)
    assert list(dest.parent.glob("run_2.fetch-*")) == []  # ... until the run is collected
    assert verify_tree(tmp_path / "results").ok
    wrong = pack(guest, tmp_path / "cache" / "wrong.tar.gz")
    with pytest.raises(FetchRefused, match="not only run_3"):
        install_fetched(wrong, dest.with_name("run_3"))
