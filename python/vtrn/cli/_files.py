"""Opening the files a subcommand is given (modules, inputs, placements) without hanging.

A path may name a FIFO, a device such as ``/dev/zero`` or a directory. Each is refused with a
ValueError (exit status 2) before anything is read: the file is opened without blocking, so a
FIFO with no writer returns at once, and only a regular file of at most ``limit`` bytes is read.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def open_regular_file(
    path: str, what: str, limit: int | None = None, name: str | None = None
) -> BinaryIO:
    """``path`` opened for binary reading when it is a regular file of at most ``limit`` bytes
    (no limit when None); a ValueError naming the file (``name``, default the path), the reason
    and ``what`` was expected otherwise."""
    name = name or path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise ValueError(f"cannot read {name}: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(
                f"{name} is {_kind(st.st_mode)}, not a regular file; give the {what} as a file"
            )
        if limit is not None and st.st_size > limit:
            raise ValueError(
                f"{name} is {st.st_size} bytes, more than the limit of {limit} bytes for a {what}"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(path: str, what: str, limit: int, name: str | None = None) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (see open_regular_file);
    a file that grows past the limit while it is read is refused too."""
    name = name or path
    with open_regular_file(path, what, limit, name) as f:
        try:
            data = f.read(limit + 1)
        except OSError as err:
            raise ValueError(f"cannot read {name}: {err.strerror}") from None
    if len(data) > limit:
        raise ValueError(f"{name} is more than the limit of {limit} bytes for a {what}")
    return data
