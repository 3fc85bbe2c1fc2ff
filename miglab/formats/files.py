"""Reading an input file without trusting it: a regular file only, at most a size cap.

Every file miglab reads on a user's say-so (campaign, inventory, nvidia-smi capture, mig-parted
file, LoadGen log, manifest, plan or campaign JSON) goes through :func:`read_input`:

* it is opened non-blocking, so a FIFO (or a symlink to one) never waits for a writer, and the
  open file is checked with ``fstat``: a FIFO, a device (``/dev/zero``, ``/dev/tty``), a socket or
  a folder is refused before a byte is read;
* at most ``limit`` bytes are read, so a huge file, or one that grows while it is read, is refused
  without holding it in memory.

A regular file on a local disk cannot block a read; that is why no deadline is needed here.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["INPUT_BYTES", "MiB", "UnreadableFile", "read_input", "read_input_text"]

MiB = 1024 * 1024
INPUT_BYTES = 1_000_000  # an input a person writes (campaign, inventory, capture, JSON settings)

_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(Exception):
    """The file cannot be an input; ``reason`` says why in a few words (never its content).
    ``kind``: missing, folder, special (FIFO, device, socket), size, encoding or error."""

    def __init__(self, reason: str, kind: str = "error"):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


def read_input(path: str | Path, *, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them;
    :class:`UnreadableFile` for anything else."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UnreadableFile("file not found", "missing") from None
    except IsADirectoryError:
        raise UnreadableFile("is a directory", "folder") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing only
            raise UnreadableFile("is not a regular file", "special") from None
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UnreadableFile("is a directory", "folder")
        for test, kind in _SPECIAL:
            if test(st.st_mode):
                raise UnreadableFile(f"is {kind}, not a regular file", "special")
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile("is not a regular file", "special")
        if st.st_size > limit:
            raise UnreadableFile(
                f"file is {st.st_size} bytes, larger than the {limit}-byte limit", "size"
            )
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 * MiB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while being read
                raise UnreadableFile(
                    f"file is over {limit} bytes, larger than the {limit}-byte limit", "size"
                )
        return b"".join(chunks)
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_input_text(path: str | Path, *, limit: int) -> str:
    """:func:`read_input` decoded as UTF-8 (a BOM allowed); :class:`UnreadableFile` if not."""
    raw = read_input(path, limit=limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (byte {exc.start})", "encoding") from None
