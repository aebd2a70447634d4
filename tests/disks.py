"""Broken disks for the store tests: a small full file system, a read-only one, a locked file.

Both need ``mount``, which needs root (or CAP_SYS_ADMIN); a test skips with
the reason when the machine does not allow it. Each is unmounted when its
block ends, whatever the test did.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["fill", "immutable", "read_only", "small_disk"]


def _mount(*arguments: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root, and the tests do not run as root")
    done = subprocess.run(
        ["mount", *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"mount is not permitted here: {done.stderr.strip()}")


def _unmount(where: Path) -> None:
    subprocess.run(
        ["umount", "--lazy", str(where)],
        capture_output=True,
        check=False,
    )


@contextmanager
def small_disk(folder: Path, size: str = "512k") -> Generator[Path]:
    """A new tmpfs of *size* mounted at *folder*/``disk``, unmounted after the block."""
    where = folder / "disk"
    where.mkdir()
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    try:
        yield where
    finally:
        _unmount(where)


def fill(disk: Path) -> Path:
    """Fill *disk* to its last block with a file of zeros; return the file (delete it to free)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        block = b"\0" * 4096
        try:
            while True:
                out.write(block)
        except OSError:
            pass
    return filler


@contextmanager
def read_only(folder: Path) -> Generator[Path]:
    """*folder* mounted again, read-only, over itself; writable again after the block."""
    _mount("--bind", str(folder), str(folder))
    try:
        done = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"a read-only remount is not permitted here: {done.stderr.strip()}")
        yield folder
    finally:
        _unmount(folder)


@contextmanager
def immutable(path: Path) -> Generator[Path]:
    """*path* made immutable (``chattr +i``: not even root may write it), mutable after the block."""
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root, and the tests do not run as root")
    done = subprocess.run(
        ["chattr", "+i", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not permitted here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
