#!/usr/bin/env python3
# STAND-IN (miglab's simulated lab), not NVIDIA software: assembles a stand-in of NVIDIA's
# closed-division MLPerf Inference harness folder (closed/NVIDIA of
# github.com/mlcommons/inference_results_v<round>) from this folder's <ROUND>/ and common/.
"""Assemble a stand-in harness tree: ``assemble.py ROUND OUT_DIR``.

Copies ``<ROUND>/`` (``v1.1``, ``v4.1``, ...) beside this file into ``OUT_DIR`` and
``common/standin_loadgen.py`` into ``OUT_DIR/code/common/standin_loadgen.py``, keeping mode bits.
Idempotent: files already equal are left alone (their times too), changed ones are replaced, and
nothing else in ``OUT_DIR`` is touched (a harness's ``build/`` or miglab's edits of
``system_list.py`` / configs are overwritten only where the round has the file: run it on a fresh
folder for a pristine tree). Standard library only; importable: ``assemble(round_name, out_dir)``
returns the files written.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

__all__ = ["HERE", "assemble", "rounds"]

HERE = Path(__file__).resolve().parent
COMMON = HERE / "common"
# common/ file -> where it goes in every round's tree
SHARED = {"standin_loadgen.py": Path("code") / "common" / "standin_loadgen.py"}
_SKIP = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def rounds() -> list[str]:
    """The rounds this folder has a stand-in of (``v1.1``, ...)."""
    return sorted(p.name for p in HERE.iterdir() if p.is_dir() and p.name.startswith("v"))


def _copy(src: Path, dst: Path, written: list[Path]) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.is_file() and filecmp.cmp(src, dst, shallow=False):
        mode = src.stat().st_mode & 0o7777
        if dst.stat().st_mode & 0o7777 != mode:
            os.chmod(dst, mode)
        return
    if dst.is_symlink() or dst.is_file():
        dst.unlink()
    shutil.copy2(src, dst)  # contents and mode bits (and times)
    written.append(dst)


def assemble(round_name: str, out_dir) -> list[Path]:
    """Copy the stand-in of ``round_name`` and the shared files into ``out_dir``; the paths
    written (empty when everything was already there)."""
    src_root = HERE / round_name
    if not src_root.is_dir() or not round_name.startswith("v"):
        known = ", ".join(rounds()) or "none"
        raise ValueError(f"no stand-in harness round {round_name!r} (known: {known})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(src_root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        rel = Path(dirpath).relative_to(src_root)
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            _copy(Path(dirpath) / name, out / rel / name, written)
    for name, target in SHARED.items():
        _copy(COMMON / name, out / target, written)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] in ("-h", "--help"):
        print(f"usage: {Path(__file__).name} ROUND OUT_DIR   (rounds: {', '.join(rounds())})")
        return 0 if args and args[0] in ("-h", "--help") else 2
    try:
        written = assemble(args[0], args[1])
    except (ValueError, OSError) as exc:
        print(f"assemble.py: {exc}", file=sys.stderr)
        return 1
    print(f"{args[1]}: stand-in harness {args[0]} ({len(written)} file(s) written)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
