"""Output folders replaced as a unit: stage every file of a run beside the folder, then swap it in.

A run writes all its outputs into a hidden staging folder next to the target (under
``<parent>/.m3bench-staging/``), flushes them to disk, and exchanges it with the target in one
atomic rename (Linux ``renameat2(RENAME_EXCHANGE)``; where the system has no exchange, two renames
with a moment in between when the target is absent). After a kill at any moment the target holds
the previous run's complete set of outputs or the new run's, never a mix; a staging folder a
killed run leaves behind is removed by the next run on the same target.

The target may hold only what scoring runs put there: the outputs a run listed in its manifest
(`MANIFEST`), the outputs this run writes, and the run's bookkeeping (Hydra's ``.hydra/`` and
``*.log`` files, carried into the new set by hard links so an open log keeps its file), the viewer's
sites (folders holding `SITE_MARKER`: carried into the new set as they are, with any file a user put there;
the viewer rebuilds its own site, engine.viewer.folder), and a
staging container holding only folders of dead processes (a killed build of an output inside the
folder, such as the viewer's site; it goes with the previous set), as are the staging folders of older
viewers' killed builds (`OLD_SITE_STAGE`). Anything else is refused with a
`ConfigError`, so no other file is ever moved or removed. `staging` alone gives the staging folder,
for an output (the viewer's site) that checks its target by its own rules.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.contract.atomic import atomic_write_json
from engine.contract.errors import ConfigError, WriteFailed

MANIFEST = ".m3bench-outputs.json"
SITE_MARKER = ".m3bench-viewer.json"
"""The marker file of a viewer's site (engine.viewer.folder.MARKER)."""
STAGING = ".m3bench-staging"
OLD_SITE_STAGE = re.compile(r"\.(?P<target>.+)\.building-(?P<pid>\d+)")
"""The staging folder of a site built by older versions of the viewer: ``.<site folder>.building-<pid>``
beside the site."""
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _is_bookkeeping(name: str) -> bool:
    return name == ".hydra" or name.endswith(".log")


def _is_site(entry: Path) -> bool:
    """Whether an entry of the folder is a viewer's site (a real folder holding its marker): kept as it is."""
    return entry.is_dir() and not entry.is_symlink() and (entry / SITE_MARKER).is_file()


def listed_outputs(target: Path) -> set[str]:
    """Entries the previous run listed as its outputs (none when it has no readable manifest)."""
    try:
        listed = json.loads((target / MANIFEST).read_text(encoding="utf-8")).get("outputs", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {name for name in listed if isinstance(name, str) and "/" not in name and name not in ("", ".", "..")}


def check_output_folder(target: Path, planned: Iterable[str] = ()) -> None:
    """ConfigError unless `target` may be replaced as a unit: it is absent or holds only a previous
    run's listed outputs, the `planned` entries of this run and bookkeeping, and it does not hold
    the working directory."""
    target = Path(target).resolve()
    cwd = Path.cwd().resolve()
    if cwd == target or target in cwd.parents:
        raise ConfigError(f"output_dir {target} holds the working directory; outputs replace the folder "
                          "as a unit, so give a folder of its own")
    if not target.is_dir():
        if target.exists():
            raise ConfigError(f"output_dir {target} is not a folder")
        return
    ours = listed_outputs(target) | set(planned) | {MANIFEST}
    ours.update(e.name for e in os.scandir(target) if _is_site(Path(e.path)))
    if _only_abandoned(target / STAGING):
        ours.add(STAGING)  # left by a killed run of an output inside the folder (the viewer's site)
    ours.update(e.name for e in os.scandir(target) if old_site_stage(Path(e.path)))  # the same, of older viewers
    foreign = sorted(e.name for e in os.scandir(target) if e.name not in ours and not _is_bookkeeping(e.name))
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise ConfigError(f"output_dir {target} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} "
                          f"no scoring run wrote ({shown}); outputs replace the folder as a unit, so give an "
                          "empty folder or a previous run's")


def _abandoned(stage: Path, target_name: str | None = None) -> bool:
    """Whether a staging folder (named target@host@pid@token) was left by a dead process of this host
    (another host's, or a live process's, is left alone); with `target_name`, only one of that target."""
    parts = stage.name.rsplit("@", 3)
    if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return False
    if target_name is not None and parts[0] != target_name:
        return False
    return process_gone(int(parts[2]))


def process_gone(pid: int) -> bool:
    """Whether no process of this host has this id (one of another user's is not gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def old_site_stage(entry: Path, target_name: str | None = None) -> bool:
    """Whether `entry` is a real folder an older viewer's killed build left (`OLD_SITE_STAGE`, its process
    gone); with `target_name`, only one of that site."""
    m = OLD_SITE_STAGE.fullmatch(entry.name)
    return (m is not None and (target_name is None or m.group("target") == target_name) and entry.is_dir()
            and not entry.is_symlink() and process_gone(int(m.group("pid"))))


def _only_abandoned(container: Path) -> bool:
    """Whether a staging container holds nothing but folders of dead processes (it goes with the folder
    that holds it when that folder is replaced)."""
    try:
        return all(_abandoned(Path(e.path)) for e in os.scandir(container))
    except OSError:
        return False


def remove_if_empty(folder: Path) -> None:
    """Remove a folder that holds nothing (a folder with files, or none at all, is left as it is)."""
    try:
        folder.rmdir()
    except OSError:
        pass


def _carry(source: Path, destination: Path) -> None:
    """Bookkeeping entry or site `source` into `destination`: files hard-linked (copied across devices)."""
    if source.is_dir() and not source.is_symlink():
        destination.mkdir()
        for child in source.iterdir():
            _carry(child, destination / child.name)
        return
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, destination, follow_symlinks=False)


def _fsync_tree(folder: Path) -> None:
    """Flush every file and folder entry under folder to disk."""
    for root, _, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(root))


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def swap_in(stage: Path, target: Path) -> None:
    """Put stage at target; the previous target ends up at stage's path (or nowhere if none)."""
    if not target.exists():
        os.rename(stage, target)
    elif not _exchange(stage, target):
        old = stage.with_name(stage.name + ".old")
        os.rename(target, old)
        os.rename(stage, target)
        os.rename(old, stage)
    _fsync_dir(target.parent)


@contextmanager
def staging(target: Path) -> Iterator[Path]:
    """A fresh staging folder beside `target` (under ``<parent>/.m3bench-staging/``), after removing the
    ones killed runs on the same target left; removed on leaving the block (the container too when empty)."""
    target = Path(target).resolve()
    container = target.parent / STAGING
    if container.is_dir():
        for leftover in container.iterdir():
            if not _abandoned(leftover, target.name):
                continue
            if leftover.name.endswith(".old") and not target.exists():
                os.rename(leftover, target)  # killed between the two renames: the previous set goes back
            else:
                shutil.rmtree(leftover, ignore_errors=True)
    stage = container / f"{target.name}@{socket.gethostname()}@{os.getpid()}@{uuid.uuid4().hex[:8]}"
    stage.mkdir(parents=True)
    try:
        yield stage
    except WriteFailed as exc:  # named as the output it was to become, not its staging copy
        written = Path(exc.filename) if isinstance(exc.filename, str) else None
        if written is None or not written.is_relative_to(stage):
            raise
        raise WriteFailed(exc.errno, exc.strerror, str(target / written.relative_to(stage))) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        remove_if_empty(container)


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A staging folder to write all of `target`'s new outputs into; on leaving the block without an
    error it replaces `target` as a unit (see the module doc), else it is removed."""
    target = Path(target).resolve()
    with staging(target) as stage:
        yield stage
        outputs = sorted(e.name for e in os.scandir(stage))
        check_output_folder(target, outputs)
        if target.is_dir():
            for entry in os.scandir(target):
                if (_is_bookkeeping(entry.name) or _is_site(Path(entry.path))) and entry.name not in outputs:
                    _carry(Path(entry.path), stage / entry.name)
        atomic_write_json(stage / MANIFEST, {"outputs": outputs})
        _fsync_tree(stage)
        swap_in(stage, target)
