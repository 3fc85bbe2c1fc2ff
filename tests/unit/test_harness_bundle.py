"""The harness bundle the mlperf role copies into the guests: same files, same bundle and
digest; engines and logs under build/ are not part of it; a folder without a Makefile is
refused in one line."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from miglab.adapters.harness_bundle import bundle, main


def _tree(root):
    (root / "code" / "common").mkdir(parents=True)
    (root / "Makefile").write_text("run_harness:\n")
    (root / "code" / "common" / "system_list.py").write_text("class KnownSystems: pass\n")
    (root / "build" / "logs").mkdir(parents=True)
    (root / "build" / "logs" / "x.txt").write_text("a log")
    return root


def test_same_files_same_bundle(tmp_path):
    src = _tree(tmp_path / "h")
    a = bundle(src, tmp_path / "cache")
    b = bundle(src, tmp_path / "cache2")
    assert a["digest"] == b["digest"] and a["files"] == 2
    assert Path(a["path"]).read_bytes() == Path(b["path"]).read_bytes()
    with tarfile.open(a["path"]) as tar:
        assert sorted(tar.getnames()) == ["Makefile", "code/common/system_list.py"]
        assert {m.mtime for m in tar.getmembers()} == {0}
    (src / "Makefile").write_text("run_harness: build\n")
    assert bundle(src, tmp_path / "cache")["digest"] != a["digest"]


def test_refuses_a_folder_without_a_makefile(tmp_path, capsys):
    assert main(["--src", str(tmp_path), "--dest", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {tmp_path}: not a harness folder (no Makefile)"]
    src = _tree(tmp_path / "h")
    assert main(["--src", str(src), "--dest", str(tmp_path / "c")]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == 2


def test_hosts_packing_at_once_all_succeed(tmp_path):
    """The play's hosts pack the same source at the same moment (one task per host)."""
    from concurrent.futures import ThreadPoolExecutor

    src = _tree(tmp_path / "h")
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: bundle(src, tmp_path / "cache"), range(16)))
    assert len({g["path"] for g in got}) == 1
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [Path(got[0]["path"]).name]
