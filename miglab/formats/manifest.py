"""Atomic result files and checksum manifests: a collected result is never half written, and a
changed or lost file is found.

* :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`atomic_copy`: the data goes to a
  temporary file in the target's folder (``.<name>.<random>.miglab-tmp``), is flushed to disk,
  then renamed over the target (``os.replace``) and the folder is synced. A reader sees the old
  file or the new one, never a part; a crash leaves at most the temporary file, which
  :func:`verify_tree` reports. :func:`write_if_changed` writes only when the bytes differ.
* :func:`write_manifest`: ``MANIFEST.sha256`` in a run folder, in ``sha256sum`` format
  (``<hex>  <relative path>`` lines sorted by path; ``sha256sum -c MANIFEST.sha256`` checks it),
  covering every file of the folder but itself and leftover temporary files. The runners write it
  last: a run folder without one did not finish (or was made by a miglab older than this).
* :func:`verify_run` / :func:`verify_tree`: a run folder's files against its manifest; a results
  tree's run folders (``.../performance|accuracy/run_<n>/``), leftover temporary files anywhere
  and staging folders of an interrupted fetch (``run_<n>.fetch-<time>``, see
  ``roles/mlperf/tasks/fetch.yml``).
* :func:`replace_dir`: swap a new run folder in for an old one with renames (the controller's
  fetch): at every moment the old folder or the new one is complete on disk.
* :func:`install_fetched`: a run the guest packed, unpacked into a staging folder, checked, then
  swapped in with :func:`replace_dir` (the mlperf role's fetch, in one call per run and VM).

``python -m miglab.formats.manifest write DIR...`` / ``verify DIR`` / ``replace NEW DEST ASIDE`` /
``install TARBALL DEST`` run them from the command line.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from miglab.errors import EXIT_FAIL, EXIT_INVALID, EXIT_OK

__all__ = [
    "MANIFEST",
    "TMP_SUFFIX",
    "Issue",
    "TreeReport",
    "atomic_copy",
    "atomic_write_bytes",
    "atomic_write_text",
    "is_temp_file",
    "read_manifest",
    "replace_dir",
    "sha256_file",
    "verify_run",
    "verify_tree",
    "write_if_changed",
    "write_manifest",
]

MANIFEST = "MANIFEST.sha256"
TMP_SUFFIX = ".miglab-tmp"
RUN_DIR_RE = re.compile(r"^run_\d+$")
FETCH_STAGING_RE = re.compile(r"^run_\d+\.fetch-")
MODE_DIRS = ("performance", "accuracy")
_LINE_RE = re.compile(rb"^(\\?)([0-9a-fA-F]{64}) [ *](.+)$")
_CHUNK = 1 << 20


# --- atomic writes -------------------------------------------------------------------------------
_umask: int | None = None


def _default_mode() -> int:
    global _umask
    if _umask is None:
        _umask = os.umask(0o022)
        os.umask(_umask)
    return 0o666 & ~_umask


def fsync_dir(path: str | Path) -> None:
    """Flush a folder's entries (a rename in it) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def is_temp_file(name: str) -> bool:
    """True for the name of a temporary file of :func:`atomic_write_bytes`."""
    return name.startswith(".") and name.endswith(TMP_SUFFIX)


def atomic_write_with(path: str | Path, fill) -> Path:
    """Create a temp file beside ``path``, ``fill(fileobj)``, fsync, rename over ``path``."""
    path = Path(path)
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = _default_mode()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, rename)."""
    return atomic_write_with(path, lambda f: f.write(data))


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded (no newline translation)."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_copy(src: str | Path, dst: str | Path) -> Path:
    """Copy ``src`` to ``dst`` atomically, with its times and mode (like ``shutil.copy2``)."""
    src = Path(src)

    def fill(f):
        with src.open("rb") as s:
            shutil.copyfileobj(s, f, _CHUNK)

    atomic_write_with(dst, fill)
    shutil.copystat(src, dst)
    return Path(dst)


def write_if_changed(path: str | Path, data: bytes) -> bool:
    """Write ``data`` atomically unless ``path`` holds exactly these bytes; True when written."""
    path = Path(path)
    try:
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    atomic_write_bytes(path, data)
    return True


# --- manifests -----------------------------------------------------------------------------------
def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _files(folder: Path) -> list[str]:
    """Relative paths (``/``-separated) of the files under ``folder``, sorted; neither the
    manifest nor temporary files; symbolic links to folders are not followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        rel = Path(dirpath).relative_to(folder)
        for name in filenames:
            if is_temp_file(name) or (name == MANIFEST and rel == Path(".")):
                continue
            out.append((rel / name).as_posix())
    return sorted(out)


def _escape(rel: str) -> bytes:
    """A path as sha256sum writes it: ``\\`` and newlines escaped (the line then starts with a
    backslash)."""
    raw = os.fsencode(rel)
    if not any(c in raw for c in (b"\\", b"\n", b"\r")):
        return raw
    return raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")


def _unescape(raw: bytes) -> bytes:
    out, i = bytearray(), 0
    while i < len(raw):
        c = raw[i : i + 1]
        if c == b"\\" and i + 1 < len(raw):
            out += {b"\\": b"\\", b"n": b"\n", b"r": b"\r"}.get(raw[i + 1 : i + 2], raw[i : i + 2])
            i += 2
        else:
            out += c
            i += 1
    return bytes(out)


def format_manifest(entries: dict[str, str]) -> bytes:
    """``{relative path: sha256 hex}`` -> the manifest's bytes (sorted by path)."""
    lines = []
    for rel in sorted(entries):
        esc = _escape(rel)
        prefix = b"\\" if esc != os.fsencode(rel) else b""
        lines.append(prefix + entries[rel].encode("ascii") + b"  " + esc + b"\n")
    return b"".join(lines)


def write_manifest(run_dir: str | Path) -> Path:
    """Write ``run_dir/MANIFEST.sha256`` (atomically) over every file of the folder but itself;
    return its path."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise NotADirectoryError(f"{run_dir}: no such folder")
    entries = {rel: sha256_file(run_dir / rel) for rel in _files(run_dir)}
    return atomic_write_bytes(run_dir / MANIFEST, format_manifest(entries))


def read_manifest(path: str | Path) -> tuple[dict[str, str], list[int]]:
    """A manifest file -> ``({relative path: sha256 hex}, [numbers of lines that are not
    '<sha256>  <path>']).``"""
    entries: dict[str, str] = {}
    bad: list[int] = []
    for n, line in enumerate(Path(path).read_bytes().split(b"\n"), start=1):
        if line.endswith(b"\r"):  # CRLF
            line = line[:-1]
        if not line:
            continue
        m = _LINE_RE.match(line)
        if not m:
            bad.append(n)
            continue
        name = _unescape(m.group(3)) if m.group(1) else m.group(3)
        entries[os.fsdecode(name)] = m.group(2).decode("ascii").lower()
    return entries, bad


# --- verification --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Issue:
    """One thing wrong: ``kind`` is no-manifest, bad-manifest, checksum, missing, unlisted,
    unreadable, temp-file, staging or empty."""

    path: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def as_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "message": self.message}


@dataclass
class TreeReport:
    """What :func:`verify_tree` found: run folders checked, files checked, issues."""

    root: str
    runs: list[str] = field(default_factory=list)
    files: int = 0
    issues: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues

    def as_json(self) -> dict:
        return {
            "root": self.root,
            "ok": self.ok,
            "runs": len(self.runs),
            "files": self.files,
            "problems": [i.as_json() for i in self.issues],
        }


def _temp_issues(folder: Path, names) -> list[Issue]:
    return [
        Issue(str(folder / n), "temp-file", "leftover temporary file of an interrupted write")
        for n in sorted(names)
        if is_temp_file(n)
    ]


def _check_run(run_dir: Path) -> tuple[list[Issue], int]:
    issues: list[Issue] = []
    manifest = run_dir / MANIFEST
    present = _files(run_dir)
    for dirpath, _dirs, filenames in os.walk(run_dir):
        issues += _temp_issues(Path(dirpath), filenames)
    if not manifest.is_file():
        issues.insert(
            0,
            Issue(
                str(run_dir),
                "no-manifest",
                f"no {MANIFEST} (the run did not finish, or an older miglab wrote it)",
            ),
        )
        return issues, len(present)
    try:
        listed, bad = read_manifest(manifest)
    except OSError as exc:
        return [Issue(str(manifest), "unreadable", f"cannot read: {exc.strerror}")] + issues, 0
    for n in bad:
        issues.append(Issue(str(manifest), "bad-manifest", f"line {n}: not '<sha256>  <path>'"))
    on_disk = set(present)
    for rel in sorted(set(listed) | on_disk):
        path = run_dir / rel
        if rel not in listed:
            issues.append(Issue(str(path), "unlisted", f"not listed in {MANIFEST}"))
        elif rel not in on_disk:
            issues.append(Issue(str(path), "missing", f"listed in {MANIFEST} but missing"))
        else:
            try:
                digest = sha256_file(path)
            except OSError as exc:
                issues.append(Issue(str(path), "unreadable", f"cannot read: {exc.strerror}"))
                continue
            if digest != listed[rel]:
                issues.append(Issue(str(path), "checksum", f"checksum differs from {MANIFEST}"))
    return issues, len(on_disk)


def verify_run(run_dir: str | Path) -> list[Issue]:
    """Everything wrong with one run folder (empty list: it matches its manifest)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return [Issue(str(run_dir), "missing", "no such folder")]
    return _check_run(run_dir)[0]


def _is_run_dir(path: Path) -> bool:
    return bool(RUN_DIR_RE.match(path.name)) and path.parent.name in MODE_DIRS


def verify_tree(root: str | Path) -> TreeReport:
    """Check a results tree (or one run folder): every run folder ``.../performance/run_<n>/``
    (and ``accuracy/``) and every other folder holding a manifest against its manifest; leftover
    temporary files and fetch staging folders anywhere. ``ValidationError`` when ``root`` is not
    a folder."""
    from miglab.errors import Problem, ValidationError

    root_p = Path(root)
    if not root_p.exists():
        raise ValidationError([Problem(str(root_p), "", "no such directory")])
    if not root_p.is_dir():
        raise ValidationError([Problem(str(root_p), "", "not a directory")])
    report = TreeReport(str(root_p))
    for dirpath, dirnames, filenames in os.walk(root_p):
        here = Path(dirpath)
        dirnames.sort()
        if FETCH_STAGING_RE.match(here.name) and here != root_p:
            report.issues.append(
                Issue(
                    str(here),
                    "staging",
                    "leftover of an interrupted fetch (a run that was not swapped in); "
                    "look inside, then remove it",
                )
            )
            dirnames[:] = []
            continue
        if (
            _is_run_dir(here)
            or MANIFEST in filenames
            or (here == root_p and RUN_DIR_RE.match(here.name))
        ):
            issues, files = _check_run(here)
            report.runs.append(str(here))
            report.files += files
            report.issues += issues
            dirnames[:] = []
            continue
        report.issues += _temp_issues(here, filenames)
    report.issues.sort(key=lambda i: i.path)  # stable: a run's own findings keep their order
    if not report.runs:
        report.issues.append(
            Issue(
                str(root_p),
                "empty",
                "no run folder (<vm>/<benchmark>/<MLPerf scenario>/performance/run_<n>/) here",
            )
        )
    return report


# --- swapping a run folder in --------------------------------------------------------------------
def replace_dir(new: str | Path, dest: str | Path, aside: str | Path) -> None:
    """Put folder ``new`` at ``dest`` with renames: an existing ``dest`` is first renamed to
    ``aside`` (which must not exist; same file system), ``new`` renamed to ``dest``, then
    ``aside`` removed. A crash leaves ``dest`` complete (old or new) or both folders intact
    under ``new`` and ``aside``; nothing is deleted before the new folder is in place."""
    new, dest, aside = Path(new), Path(dest), Path(aside)
    if not new.is_dir():
        raise NotADirectoryError(f"{new}: no such folder")
    if aside.exists() or aside.is_symlink():
        raise FileExistsError(f"{aside}: exists already")
    had = dest.exists() or dest.is_symlink()
    if had:
        os.rename(dest, aside)
        fsync_dir(aside.parent)
    try:
        os.rename(new, dest)
    except OSError:
        if had:
            os.rename(aside, dest)
        raise
    fsync_dir(dest.parent)
    if new.parent != dest.parent:
        fsync_dir(new.parent)
    if had:
        if aside.is_dir() and not aside.is_symlink():
            shutil.rmtree(aside)
        else:
            aside.unlink()


def _unpack_run(tarball: str | Path, stage: Path, name: str) -> None:
    import tarfile

    with tarfile.open(tarball, "r:gz") as tar:
        members = tar.getmembers()
        names = {m.name.split("/", 1)[0] for m in members}
        if names != {name}:
            raise FetchRefused(f"{tarball}: holds {sorted(names)}, not only {name}/")
        odd = [
            m.name for m in members if not (m.isfile() or m.isdir()) or ".." in m.name.split("/")
        ]
        if odd:  # only plain files and folders inside run_<n>/ (Python < 3.11.4 has no filter)
            raise FetchRefused(f"{tarball}: unexpected members {odd[:5]}")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(stage, filter="data")
        else:
            tar.extractall(stage)


class FetchRefused(Exception):
    """A fetched run that cannot go into the results tree; the tree is left as it was."""


def install_fetched(tarball: str | Path, dest: str | Path) -> dict:
    """Put the run folder packed in ``tarball`` (``run_<n>/...``, as the guest packed it) at
    ``dest`` without ever losing a collected result: unpack into a staging folder beside
    ``dest`` (``run_<n>.fetch-<UTC time>``), check it against its manifest (write one when the
    guest wrote none), then :func:`replace_dir`; the staging folder is removed at the end. A run
    that does not match its manifest raises :class:`FetchRefused`; ``dest`` stays as it was and
    the staging folder is kept for a look (``miglab results verify`` lists it); on any other
    error (a full disk) it is removed."""
    from datetime import UTC, datetime

    dest = Path(dest)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    stage = dest.with_name(f"{dest.name}.fetch-{stamp}")
    stage.mkdir(parents=True)
    staged = stage / dest.name
    try:
        _unpack_run(tarball, stage, dest.name)
        issues = verify_run(staged)
        problems = [str(i) for i in issues if i.kind != "no-manifest"]
        wrote_manifest = not problems and len(issues) > 0
        if wrote_manifest:
            write_manifest(staged)
    except BaseException:  # a full disk, a bad tarball: nothing of it stays, dest is untouched
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if problems:
        raise FetchRefused(
            f"{len(problems)} problem(s) in {staged}: {'; '.join(problems)} -- {dest} is left "
            f"as it was; the fetched run stays in {stage}"
        )
    replace_dir(staged, dest, stage / "replaced")
    shutil.rmtree(stage)
    # Staging folders an earlier fetch of this run left (interrupted, or refused): the run is
    # collected now, so they are moot.
    for old in dest.parent.glob(f"{dest.name}.fetch-*"):
        shutil.rmtree(old, ignore_errors=True)
    return {"dest": str(dest), "wrote_manifest": wrote_manifest}


# --- command line --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``write DIR...`` (exit 0), ``verify DIR`` (0 ok, 1 problems, 2 no folder),
    ``replace NEW DEST ASIDE`` (0 done, 2 refused), ``install TARBALL DEST`` (0 done, 1 the
    fetched run does not match its manifest, 2 cannot)."""
    import argparse
    import json
    import tarfile

    from miglab.errors import ValidationError

    p = argparse.ArgumentParser(prog="python -m miglab.formats.manifest")
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help=f"write {MANIFEST} in each run folder")
    w.add_argument("dirs", nargs="+", metavar="DIR")
    v = sub.add_parser("verify", help="check a results tree or a run folder")
    v.add_argument("dir", metavar="DIR")
    r = sub.add_parser("replace", help="swap folder NEW in at DEST (old one via ASIDE, removed)")
    r.add_argument("new", metavar="NEW")
    r.add_argument("dest", metavar="DEST")
    r.add_argument("aside", metavar="ASIDE")
    i = sub.add_parser("install", help="unpack a fetched run, check it, swap it in at DEST")
    i.add_argument("tarball", metavar="TARBALL")
    i.add_argument("dest", metavar="DEST")
    a = p.parse_args(argv)
    try:
        if a.cmd == "install":
            try:
                print(json.dumps(install_fetched(a.tarball, a.dest)))
            except FetchRefused as exc:
                print(f"error: {exc}", file=sys.stderr)
                return EXIT_FAIL
            return EXIT_OK
        if a.cmd == "write":
            for d in a.dirs:
                print(f"wrote {write_manifest(d)}")
            return EXIT_OK
        if a.cmd == "replace":
            replace_dir(a.new, a.dest, a.aside)
            print(f"replaced {a.dest}")
            return EXIT_OK
        report = verify_tree(a.dir)
    except ValidationError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    except (OSError, tarfile.TarError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    for issue in report.issues:
        print(issue)
    return EXIT_OK if report.ok else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
