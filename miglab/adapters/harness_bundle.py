"""``python -m miglab.adapters.harness_bundle --src DIR --dest CACHE``: NVIDIA's harness folder
(closed/NVIDIA) packed on the controller for the mlperf role to copy into the guests.

The bundle is a gzip'ed tar with fixed owners, times and order, named by the digest of the
folder's files (paths, modes, contents), so the same files give the same bundle and the guest
knows from the digest alone whether its copy is current. ``build/`` (engines and logs a harness
writes there), ``.git`` and Python caches are left out. Answers one JSON line: ``{"path",
"digest", "files"}``; exit 2 with one ``error:`` line when DIR is not a harness folder.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from miglab.errors import EXIT_INVALID, EXIT_OK

SKIP_DIRS = {"build", ".git", "__pycache__"}


def harness_files(src: Path) -> list[Path]:
    """The folder's regular files, sorted, without SKIP_DIRS at any depth (links refused)."""
    out = []
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(root) / name
            if path.is_symlink():
                raise ValueError(f"{path}: a symbolic link (the bundle holds regular files)")
            if path.is_file() and not name.endswith(".pyc"):
                out.append(path)
    return out


def digest(src: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        rel = path.relative_to(src).as_posix()
        mode = path.stat().st_mode & 0o777
        h.update(f"{rel}\0{mode:o}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def bundle(src: str | Path, dest: str | Path) -> dict:
    src, dest = Path(src), Path(dest)
    if not (src / "Makefile").is_file():
        raise ValueError(f"{src}: not a harness folder (no Makefile)")
    files = harness_files(src)
    d = digest(src, files)
    path = dest / f"nvidia-harness-{d[:16]}.tar.gz"
    if not path.is_file():
        dest.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for f in files:
                info = tarfile.TarInfo(f.relative_to(src).as_posix())
                data = f.read_bytes()
                info.size, info.mode, info.mtime = len(data), f.stat().st_mode & 0o777, 0
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                tar.addfile(info, io.BytesIO(data))
        # a temporary name of its own: the play's hosts pack the same source at once
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=dest)
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(buf.getvalue())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return {"path": str(path), "digest": d, "files": len(files)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m miglab.adapters.harness_bundle")
    p.add_argument("--src", required=True, help="the harness folder (closed/NVIDIA)")
    p.add_argument("--dest", required=True, help="the controller folder the bundle goes to")
    a = p.parse_args(argv)
    try:
        print(json.dumps(bundle(a.src, a.dest)))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
