"""Adapter: the miglab wheel every guest installs, made on the controller from the miglab that
runs there (the guests must run the same code: the MLPerf session, the barrier, the SUTs).

- An editable install (a checkout; PEP 610's ``direct_url.json`` names its folder), or a source
  folder given with ``--source``: ``pip wheel --no-deps`` of it, reused while a checksum of its
  sources is unchanged (pip's isolated build costs seconds).
- An installed wheel (``pip install miglab-*.whl``, no source anywhere): its installed files are
  packed into a wheel again, with a new RECORD.

Either way the same sources give the same bytes (fixed timestamps), so copying the wheel to the
guests changes nothing on a second run. Prints the wheel's path.

    python -m miglab.adapters.guest_wheel --dest DIR [--source DIR] [--pip-arg=ARG ...]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata as metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

DIST = "miglab"
KEY_FILE = "wheel.key"
SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01: the earliest time a zip entry can hold
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
# Written by the installer, not part of the wheel (RECORD is made again).
INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


class WheelError(RuntimeError):
    """The wheel could not be made (message says why)."""


def editable_source() -> Path | None:
    """The source folder of an editable install of miglab (PEP 610), else None."""
    try:
        text = metadata.distribution(DIST).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    info = json.loads(text)
    url = info.get("url", "")
    if not info.get("dir_info", {}).get("editable") or not url.startswith("file:"):
        return None
    folder = Path(url2pathname(urlparse(url).path))
    return folder if (folder / "pyproject.toml").is_file() else None


def _source_files(src: Path) -> list[Path]:
    files = [src / "pyproject.toml", src / "README.md"]
    for top, dirs, names in os.walk(src / DIST, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [Path(top) / n for n in sorted(names) if not n.endswith(".pyc")]
    return [f for f in files if f.is_file()]


def source_key(src: Path, pip_args: list[str]) -> str:
    """A checksum of what the wheel is built from (paths and contents) and how."""
    digest = hashlib.sha256()
    for path in _source_files(src):
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(" ".join(pip_args).encode())
    return digest.hexdigest()[:32]


def _wheels(dest: Path) -> list[Path]:
    return sorted(dest.glob(f"{DIST}-*.whl"))


def build_from_source(src: Path, dest: Path, pip_args: list[str]) -> Path:
    key = source_key(src, pip_args)
    key_file = dest / KEY_FILE
    have = _wheels(dest)
    if len(have) == 1 and key_file.is_file() and key_file.read_text().strip() == key:
        return have[0]
    for old in have:
        old.unlink()
    key_file.unlink(missing_ok=True)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *pip_args,
         "-w", str(dest), str(src)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH},
    )  # fmt: skip
    built = _wheels(dest)
    if res.returncode != 0 or len(built) != 1:
        tail = (res.stderr or res.stdout).strip().splitlines()[-5:]
        raise WheelError(f"pip wheel {src} failed (rc {res.returncode}): " + " | ".join(tail))
    key_file.write_text(key + "\n")
    return built[0]


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def installed_entries() -> tuple[str, list[tuple[str, bytes]]]:
    """The installed distribution's own files (package and dist-info), as (wheel name, entries)."""
    dist = metadata.distribution(DIST)
    entries = []
    tag = "py3-none-any"
    for file in dist.files or []:
        parts = file.parts
        if "__pycache__" in parts or file.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info"):
            if len(parts) == 2 and parts[1] in INSTALL_ONLY:
                continue
        elif parts[0] != DIST:  # console scripts: made again from entry_points.txt
            continue
        data = Path(file.locate()).read_bytes()
        if parts[0].endswith(".dist-info") and parts[1:] == ("WHEEL",):
            tags = [ln.split(":", 1)[1].strip() for ln in data.decode().splitlines()
                    if ln.startswith("Tag:")]  # fmt: skip
            tag = tags[0] if tags else tag
        entries.append((file.as_posix(), data))
    if not any(name.startswith(f"{DIST}/") for name, _ in entries):
        raise WheelError(
            f"the installed {DIST} lists none of its package files (an editable install whose "
            "source folder is gone?): give --source DIR"
        )
    name = dist.metadata["Name"].replace("-", "_").lower()
    return f"{name}-{dist.version}-{tag}.whl", sorted(entries)


def pack_installed(dest: Path) -> Path:
    wheel_name, entries = installed_entries()
    info_dir = next(n.split("/", 1)[0] for n, _ in entries if n.endswith(".dist-info/METADATA"))
    record = "".join(f"{n},{_record_hash(d)},{len(d)}\n" for n, d in entries)
    record += f"{info_dir}/RECORD,,\n"
    target = dest / wheel_name
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in [*entries, (f"{info_dir}/RECORD", record.encode())]:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    if target.is_file() and target.read_bytes() == tmp.read_bytes():
        tmp.unlink()  # the same bytes: leave the file (and its time) as it is
    else:
        tmp.replace(target)
    for old in _wheels(dest):
        if old != target:
            old.unlink()
    (dest / KEY_FILE).unlink(missing_ok=True)
    return target


def guest_wheel(dest: Path, source: Path | None = None, pip_args: list[str] = ()) -> Path:
    """The wheel for the guests in ``dest``: built from ``source`` or the editable install's
    folder, else packed from the installed files."""
    dest.mkdir(parents=True, exist_ok=True)
    src = source or editable_source()
    if src is not None:
        if not (src / "pyproject.toml").is_file():
            raise WheelError(f"{src}: --source: no pyproject.toml (not a miglab source folder)")
        return build_from_source(src, dest, list(pip_args))
    return pack_installed(dest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m miglab.adapters.guest_wheel", description=__doc__)
    ap.add_argument("--dest", required=True, type=Path, help="folder for the wheel")
    ap.add_argument("--source", type=Path, help="a miglab source folder (default: see above)")
    ap.add_argument("--pip-arg", action="append", default=[], help="an argument of pip wheel")
    args = ap.parse_args(argv)
    try:
        print(guest_wheel(args.dest, args.source, args.pip_arg))
    except (WheelError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
