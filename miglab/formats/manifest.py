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
import errno
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from miglab.errors import EXIT_FAIL, EXIT_INVALID, EXIT_OK
from miglab.formats.files import MiB, UnreadableFile, read_input

__all__ = [
    "MANIFEST",
    "TMP_SUFFIX",
    "Issue",
    "TreeReport",
    "atomic_copy",
    "atomic_write_bytes",
    "atomic_write_text",
    "is_run_name",
    "is_temp_file",
    "parse_manifest",
    "read_manifest",
    "replace_dir",
    "sha256_file",
    "verify_run",
    "verify_tree",
    "walk",
    "write_if_changed",
    "write_manifest",
]

MANIFEST = "MANIFEST.sha256"
TMP_SUFFIX = ".miglab-tmp"
# A run folder is named run_<n>: n = 1, 2, ... in decimal without leading zeros, spaces or signs
# (``run_01`` and ``run_1`` would be one run twice; fullmatch, so no trailing newline either).
RUN_DIR_RE = re.compile(r"run_([1-9][0-9]{0,5})")
FETCH_STAGING_RE = re.compile(r"^run_\d+\.fetch-")
MANIFEST_LIMIT = 16 * MiB  # a run's manifest lists a few files: 64 bytes and a path each
_MAX_LINE_ISSUES = 20  # bad lines of one manifest reported one by one; the rest are counted
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


# --- walking a tree ------------------------------------------------------------------------------
def is_run_name(name: str) -> bool:
    """``run_<n>`` exactly: n = 1, 2, ... without leading zeros, spaces or other characters."""
    return RUN_DIR_RE.fullmatch(name) is not None


def walk(root: str | Path, onerror=None):
    """Walk ``root`` top-down, in name order, without ever following a symbolic link and without
    recursion (any depth): yield ``(folder, dirs, files, links)`` per folder -- ``dirs`` its real
    sub-folders (prune the list in place to skip some), ``links`` its symbolic links (to anything,
    or dangling), ``files`` everything else (regular files, FIFOs, devices, sockets).
    ``onerror(folder, exc)`` is called for a folder that cannot be listed."""
    stack = [Path(root)]
    while stack:
        here = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        links: list[str] = []
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if onerror is not None:
                onerror(here, exc)
            continue
        for e in entries:
            try:
                if e.is_symlink():
                    links.append(e.name)
                elif e.is_dir(follow_symlinks=False):
                    dirs.append(e.name)
                else:
                    files.append(e.name)
            except OSError:
                files.append(e.name)
        yield here, dirs, files, links
        stack.extend(here / d for d in reversed(dirs))


def link_reason(path: str | Path, tree: str | Path) -> str:
    """Why the symbolic link ``path`` is refused: where it points, and whether that leaves
    ``tree`` (the results tree, or the run folder)."""
    path = Path(path)
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    try:
        real = Path(os.path.realpath(path))
        inside = real.is_relative_to(Path(os.path.realpath(tree)))
    except (OSError, ValueError):
        inside = False
    where = "inside" if inside else "outside"
    return f"a symbolic link to {target!r} ({where} the results tree): refused, not followed"


def _kind(path: Path) -> str | None:
    """None for a regular file (not a symbolic link), else what it is ("a FIFO", ...)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISREG(st.st_mode):
        return None
    for test, kind in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(st.st_mode):
            return kind
    return "not a regular file"


# --- manifests -----------------------------------------------------------------------------------
def sha256_file(path: str | Path) -> str:
    """The sha256 of the regular file ``path``, read in chunks; ``OSError`` for anything else
    (a FIFO or a device is refused before a byte is read: never blocks, never reads forever)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        h = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def _files(folder: Path) -> list[str]:
    """Relative paths (``/``-separated) of the files under ``folder``, sorted; neither the
    manifest nor temporary files; symbolic links to folders are not followed."""
    out = []
    for here, _dirs, files, links in walk(folder):
        rel = here.relative_to(folder)
        names = files + [n for n in links if not os.path.isdir(here / n)]
        for name in names:
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


def _path_problem(rel: str) -> str | None:
    """Why a manifest's path cannot name a file of its run folder (None: it can)."""
    if not rel:
        return "empty path"
    if "\0" in rel:
        return "path holds a NUL byte"
    if rel.startswith("/"):
        return f"absolute path {rel!r}: leaves the run folder"
    parts = rel.split("/")
    if ".." in parts:
        return f"path {rel!r} leaves the run folder (..)"
    if any(p in ("", ".") for p in parts):
        return f"path {rel!r} is not a plain relative path"
    return None


def parse_manifest(data: bytes) -> tuple[dict[str, str], list[tuple[int, str]]]:
    """A manifest's bytes -> ``({relative path: sha256 hex}, [(line number, problem)])``: lines
    that are not ``<sha256>  <path>``, paths that leave the run folder (absolute, ``..``) and
    paths listed twice (the first line wins; a second listing fails verification even when
    the checksums agree)."""
    entries: dict[str, str] = {}
    first: dict[str, int] = {}
    problems: list[tuple[int, str]] = []
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.endswith(b"\r"):  # CRLF
            line = line[:-1]
        if not line:
            continue
        m = _LINE_RE.match(line)
        if not m:
            problems.append((n, "not '<sha256>  <path>'"))
            continue
        name = os.fsdecode(_unescape(m.group(3)) if m.group(1) else m.group(3))
        why = _path_problem(name)
        if why is not None:
            problems.append((n, why))
            continue
        if name in entries:
            problems.append((n, f"lists {name!r} again (first at line {first[name]})"))
            continue
        entries[name] = m.group(2).decode("ascii").lower()
        first[name] = n
    return entries, problems


def read_manifest(path: str | Path) -> tuple[dict[str, str], list[int]]:
    """A manifest file -> ``({relative path: sha256 hex}, [numbers of lines that cannot be
    used]).`` (see :func:`parse_manifest`); ``OSError`` when it cannot be read."""
    try:
        data = read_input(path, limit=MANIFEST_LIMIT)
    except UnreadableFile as exc:
        raise OSError(errno.EINVAL, exc.reason, str(path)) from None
    entries, problems = parse_manifest(data)
    return entries, [n for n, _ in problems]


# --- verification --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Issue:
    """One thing wrong: ``kind`` is no-manifest, bad-manifest, checksum, missing, unlisted,
    unreadable, symlink, bad-name, temp-file, staging or empty."""

    path: str
    kind: str
    message: str

    def __str__(self) -> str:
        return _one_line(f"{self.path}: {self.message}")

    def as_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "message": self.message}


def _one_line(text: str) -> str:
    """``text`` with control characters (a newline in a file name) and undecodable bytes
    escaped, so that one issue prints as one line on any terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


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


def _check_run(run_dir: Path, tree: Path | None = None) -> tuple[list[Issue], int]:
    """Issues of one run folder and the number of its files. Nothing in it is followed through
    a symbolic link, and only regular files are read."""
    tree = tree or run_dir
    issues: list[Issue] = []
    present: list[str] = []  # regular files, relative
    skipped: set[str] = set()  # reported already (symbolic links, FIFOs, devices...)

    def unlistable(folder: Path, exc: OSError) -> None:
        issues.append(Issue(str(folder), "unreadable", f"cannot list: {exc.strerror or exc}"))

    for here, _dirs, files, links in walk(run_dir, onerror=unlistable):
        rel = here.relative_to(run_dir)
        issues.extend(_temp_issues(here, files))
        for name in links:
            skipped.add((rel / name).as_posix())
            issues.append(Issue(str(here / name), "symlink", link_reason(here / name, tree)))
        for name in files:
            if is_temp_file(name) or (name == MANIFEST and rel == Path(".")):
                continue
            kind = _kind(here / name)
            if kind is None:
                present.append((rel / name).as_posix())
            else:
                skipped.add((rel / name).as_posix())
                issues.append(Issue(str(here / name), "unreadable", f"is {kind}, not a file"))
    manifest = run_dir / MANIFEST
    if MANIFEST in skipped:
        return issues, len(present)  # a symbolic link or a FIFO as the manifest: said above
    if not os.path.lexists(manifest):
        issues.insert(
            0,
            Issue(
                str(run_dir),
                "no-manifest",
                f"no {MANIFEST} (the run did not finish, or an older miglab wrote it)",
            ),
        )
        return issues, len(present)
    kind = _kind(manifest)
    if kind is not None:  # a folder named like the manifest
        issues.append(Issue(str(manifest), "unreadable", f"is {kind}, not a file"))
        return issues, len(present)
    try:
        data = read_input(manifest, limit=MANIFEST_LIMIT)
    except UnreadableFile as exc:
        return [Issue(str(manifest), "unreadable", exc.reason), *issues], 0
    listed, problems = parse_manifest(data)
    for n, why in problems[:_MAX_LINE_ISSUES]:
        issues.append(Issue(str(manifest), "bad-manifest", f"line {n}: {why}"))
    if len(problems) > _MAX_LINE_ISSUES:
        more = len(problems) - _MAX_LINE_ISSUES
        issues.append(Issue(str(manifest), "bad-manifest", f"and {more} more bad line(s)"))
    on_disk = set(present)
    for rel in sorted(set(listed) | on_disk):
        if rel in skipped:
            continue
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


def verify_tree(root: str | Path) -> TreeReport:
    """Check a results tree (or one run folder): every run folder ``.../performance/run_<n>/``
    (and ``accuracy/``) and every other folder holding a manifest against its manifest; leftover
    temporary files and fetch staging folders anywhere; symbolic links anywhere (never followed:
    what they point to is not part of the tree) and folders under ``performance/`` or
    ``accuracy/`` that are not named ``run_<n>``. ``ValidationError`` when ``root`` is not a
    folder."""
    from miglab.errors import Problem, ValidationError

    root_p = Path(root)
    if not root_p.exists():
        raise ValidationError([Problem(str(root_p), "", "no such directory")])
    if not root_p.is_dir():
        raise ValidationError([Problem(str(root_p), "", "not a directory")])
    report = TreeReport(str(root_p))

    def unlistable(folder: Path, exc: OSError) -> None:
        report.issues.append(
            Issue(str(folder), "unreadable", f"cannot list: {exc.strerror or exc}")
        )

    for here, dirnames, filenames, links in walk(root_p, onerror=unlistable):
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
        in_mode_dir = here != root_p and here.parent.name in MODE_DIRS
        if in_mode_dir and not is_run_name(here.name):
            report.issues.append(
                Issue(
                    str(here),
                    "bad-name",
                    f"run folder {here.name!r} is not named run_<n> (n = 1, 2, ... without "
                    "leading zeros): no report counts it",
                )
            )
        if (
            in_mode_dir
            or MANIFEST in filenames
            or MANIFEST in links
            or (here == root_p and is_run_name(here.name))
        ):
            issues, files = _check_run(here, root_p)
            report.runs.append(str(here))
            report.files += files
            report.issues += issues
            dirnames[:] = []
            continue
        report.issues += _temp_issues(here, filenames)
        report.issues += [
            Issue(str(here / n), "symlink", link_reason(here / n, root_p)) for n in links
        ]
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
                print(json.dumps(install_fetched(a.tarball, a.dest), allow_nan=False))
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
