"""The files of a contained command (engine.judging.sandbox.runner): its scratch folder made and removed, the
copy of its workspace made from descriptors (`copy_folder`: no link followed, no FIFO, socket or device opened)
and the copies of the files it reads, read beneath their folder; each in time (`CopyExpired`)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.contract.beneath import Refused, read_beneath


def _unlock(folder: str) -> None:
    os.chmod(folder, 0o700)
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            _unlock(entry.path)


def remove_scratch(folder: Path) -> None:
    """Remove the scratch folder, whatever modes the command left in it."""
    try:
        shutil.rmtree(folder)
    except OSError:
        try:
            _unlock(str(folder))
        except OSError:
            pass
        shutil.rmtree(folder, ignore_errors=True)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
COPY_BLOCK = 8 << 20


class CopyExpired(Exception):
    """The copy of a check's inputs ran past its time limit."""


def _in_time(deadline: float) -> None:
    if time.monotonic() >= deadline:
        raise CopyExpired


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def _copy_file(source: int, target: int, deadline: float) -> None:
    """The bytes of the descriptor `source` written to `target`, a block at a time (in the kernel,
    sendfile, where it can), in time."""
    kernel = True
    while True:
        _in_time(deadline)
        if kernel:
            try:
                if os.sendfile(target, source, None, COPY_BLOCK) == 0:
                    return
                continue
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                kernel = False
        block = os.read(source, COPY_BLOCK)
        if not block:
            return
        view = memoryview(block)
        while view:
            view = view[os.write(target, view):]


def _copy_entries(folder: int, target: Path, where: str, deadline: float, skipped: list[str]) -> None:
    """Copy the entries of the open folder `folder` into `target` (made here), each opened from the
    folder's descriptor with O_NOFOLLOW; `where`: its path in the copy, for `skipped`."""
    info = os.fstat(folder)
    target.mkdir(mode=0o700)
    with os.scandir(folder) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        _in_time(deadline)
        shown = f"{where}{name}"
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=folder)
                try:
                    _copy_entries(child, target / name, f"{shown}/", deadline, skipped)
                finally:
                    os.close(child)
                continue
            if not stat.S_ISREG(mode):  # a link, FIFO, socket or device: never opened
                skipped.append(f"{shown} ({_kind(mode)})")
                continue
            source = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            continue
        except OSError as exc:  # e.g. swapped for a link since it was listed (ELOOP)
            skipped.append(f"{shown} ({exc.strerror or type(exc).__name__})")
            continue
        try:
            found = os.fstat(source)
            if not stat.S_ISREG(found.st_mode):  # swapped for a FIFO since: opened without waiting, not read
                skipped.append(f"{shown} ({_kind(found.st_mode)})")
                continue
            copy = os.open(target / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                _copy_file(source, copy, deadline)
                os.fchmod(copy, stat.S_IMODE(found.st_mode))
                os.utime(copy, ns=(found.st_atime_ns, found.st_mtime_ns))
            finally:
                os.close(copy)
        finally:
            os.close(source)
    os.chmod(target, stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def copy_folder(source: Path, target: Path, deadline: float) -> list[str]:
    """Copy the folder `source` to `target` from file descriptors: `source` opened with O_NOFOLLOW (OSError
    when it is a link), each folder below from its parent's descriptor with O_NOFOLLOW, each regular file
    with O_NOFOLLOW and O_NONBLOCK, its mode and times kept. Symbolic links, FIFOs, sockets and devices
    are left out without being opened (a file swapped for one while it is copied too): the entries left
    out, each ``path (kind)``. CopyExpired once `deadline` (a time.monotonic()) has passed."""
    skipped: list[str] = []
    folder = os.open(source, _DIR_FLAGS)
    try:
        _copy_entries(folder, target, "", deadline, skipped)
    finally:
        os.close(folder)
    return skipped


def _copies(top: Path, root: Path, files: Sequence[Path], deadline: float) -> list[tuple[Path, list[str]]]:
    """Copies of `files` under `top`, each read beneath `root` from descriptors (its path resolved once,
    then opened component by component with no link followed: `engine.contract.beneath`), with the
    names each is shown at (its own and its resolved path); OSError naming a file that cannot be read
    so (a link out of `root`, one swapped in since, a FIFO, ...)."""
    top.mkdir()
    base = root.resolve()
    out = []
    for n, path in enumerate(files):
        _in_time(deadline)
        resolved = path.resolve()
        try:
            data = read_beneath(base, resolved.relative_to(base) if resolved.is_relative_to(base) else resolved)
        except Refused as exc:
            raise OSError(f"{path}: {exc}") from None
        copy = top / f"{n}{path.suffix}"
        copy.write_bytes(data)
        out.append((copy, sorted({str(path.absolute()), str(resolved)})))
    return out


@dataclass
class Staged:
    """What `prepare_scratch` made: the bytes of the scratch folder on a tmpfs, the workspace's entries left
    out and the copies of the files read."""

    size: int
    skipped: list[str]
    copied: list[tuple[Path, list[str]]]


def prepare_scratch(top: Path, workspace: Path | None, inputs: Mapping[str, bytes], copies: Sequence[Path],
             root: Path | None, deadline: float) -> Staged:
    """Under `top`: the scratch folder's job (holding the inputs), home, tmp and copy of the workspace
    (`copy_folder`), and the copies of `copies` (read beneath `root`; none without `root`); the bytes
    the scratch folder takes on a tmpfs (whole pages)."""
    scratch = top / "scratch"
    scratch.mkdir()
    for name in ("job", "home", "tmp"):
        (scratch / name).mkdir()
    skipped = copy_folder(workspace, scratch / "workspace", deadline) if workspace is not None else []
    for name, data in inputs.items():
        (scratch / "job" / name).write_bytes(data)
    copied = _copies(top / "code", root, copies, deadline) if root is not None else []
    size = sum(-(-os.lstat(os.path.join(folder, n)).st_size // 4096) * 4096
               for folder, dirs, files in os.walk(scratch) for n in (*dirs, *files))
    return Staged(size, skipped, copied)
