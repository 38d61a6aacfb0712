"""Files a run writes, written safely: never through a symbolic link, whole or not at all, and recorded, so
that a run later removes only what it wrote. The rules below build on `replay_service.files` (atomic writes,
no links on the way, bounded reads), which this module also hands on, so the packages above import every file
rule from here.

- `open_append`: a file opened to append with `O_NOFOLLOW` (a link there is an error, not followed);
- `Written`: the run directory's record of what the run created (`OUT/.written`, a relative path a line),
  which pruning and `--overwrite` read: they remove those entries only, never through a link;
- `lock_directory`: a directory held by one process (an exclusive `flock` on a lock file in it, never a link,
  naming its holder), the run directory's and a report's;
- `OutputDirectory`: a directory of outputs written whole (a report's): staged, locked, then its earlier
  output replaced entry by entry, never a link followed, never a run's or a user's directory taken;
- `write_error`: a failure to write as one line naming the path and the cause.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from replay_service.files import Unreadable, inside, no_links, read_bounded, sync_directory, write_atomically

__all__ = ["RECORD", "Held", "OutputDirectory", "Unreadable", "Written", "lock_directory", "no_links", "open_append",
           "read_bounded", "remove_recorded", "write_atomically", "write_error"]

RECORD = ".written"


def open_append(path: Path, newline: str | None = None):
    """`path` opened to append text (created if absent), never through a link: OSError where it is a symbolic
    link (ELOOP) or a file with other hard links (EMLINK)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:  # another name for a file elsewhere: never written
        os.close(fd)
        raise OSError(errno.EMLINK, "not a regular file of its own (a hard link, or not a file)", str(path))
    return os.fdopen(fd, "a", newline=newline)


class Written:
    """The record of what a run created in its directory: `OUT/.written`, one path relative to OUT a line,
    appended as the run creates each file or directory (a line ending in "/" is a directory the run made,
    removed whole). Appended without following links; read back by `remove_recorded`."""

    def __init__(self, out: Path):
        self.out = out
        self.path = out / RECORD
        self.new = not self.path.exists()  # this run starts the record (`discard` may take it back)
        self.known = set(self.read(out))

    @staticmethod
    def read(out: Path) -> list[str]:
        """The record's paths, in order (none when there is no record)."""
        path = out / RECORD
        if not path.is_file() or path.is_symlink():
            return []
        return [line for line in path.read_text().splitlines() if line.strip()]

    def add(self, *paths: str | Path) -> None:
        """Record `paths` (relative to OUT; a directory given with a trailing "/")."""
        new = [str(p) for p in paths if str(p) not in self.known]
        if not new:
            return
        with open_append(self.path) as f:
            f.write("".join(p + "\n" for p in new))
            f.flush()
            os.fsync(f.fileno())
        self.known.update(new)

    def discard(self) -> None:
        """A run that could not start takes back the record it began (what it recorded is gone with it)."""
        if self.new:
            self.path.unlink(missing_ok=True)
            self.known.clear()

    def forget(self, *paths: str | Path) -> None:
        """Paths the run removed itself (pruned snapshots): rewritten without them."""
        gone = {str(p) for p in paths}
        if not gone & self.known:
            return
        kept = [p for p in self.read(self.out) if p not in gone]
        write_atomically(self.path, lambda f: f.write("".join(p + "\n" for p in kept)))
        self.known -= gone


def remove_recorded(out: Path, paths: list[str]) -> None:
    """Remove what a run recorded (`Written`): each path that is inside `out` with no link on the way, files and
    links as themselves, directories the run made whole, in the reverse order of their making; what is gone
    already is skipped. A recorded file's temp files (`.<name>.<random>.tmp`, plain files: what `write_atomically`
    leaves when the process is killed mid-write; the name was recorded before the write) go with it. OSError
    goes up."""
    for recorded in reversed(paths):
        is_dir = recorded.endswith("/")
        relative = Path(recorded.rstrip("/"))
        if not inside(relative) or (relative.parent != Path(".") and not no_links(out, relative.parent)):
            continue  # outside the run directory, or through a link: never
        path = out / relative
        if not is_dir:
            for temp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
                if stat.S_ISREG(os.lstat(temp).st_mode):
                    temp.unlink()
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if is_dir or not stat.S_ISDIR(mode):
            _remove(path, is_dir and stat.S_ISDIR(mode))


def _remove(path: Path, whole: bool) -> None:
    """One entry of a run's record: a directory it made, whole; a file or a link, itself."""
    if whole:
        shutil.rmtree(path)
    else:
        path.unlink()


def write_error(path: Path, e: BaseException) -> str:
    """A failure to write `path` in one line: `cannot write PATH (cause)`, the cause the system's words (file
    exists, read-only file system, no space left on device, permission denied, not a directory) or the first
    line of another error's (torch's on a full disk)."""
    text = str(e).strip()
    reason = getattr(e, "strerror", None) or (text.splitlines()[0] if text else type(e).__name__)
    return f"cannot write {path} ({reason})"


class Held(Exception):
    """A directory another process holds (`lock_directory`): its text names the holder."""


def lock_directory(directory: Path, name: str = ".lock") -> TextIO:
    """`directory/name` opened (created if absent) and locked exclusively for this process: the open file,
    whose closing (or the process's end, however it ends) releases it; the holder's line in it names this
    process. `Held` where another process holds it (its line); OSError where it cannot be made or written
    (ELOOP for a link there, EMLINK for a file with other hard links or not a file; a lock file this call made
    is removed again: a full disk leaves none). A file system without locks: a warning, and the file
    unlocked."""
    path = directory / name
    created = False
    try:  # never through a link: a planted `.lock -> somefile` must not be written to
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        created = True
    except FileExistsError:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    lock = os.fdopen(fd, "r+")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:  # a hard link would be written through, too
            raise OSError(errno.EMLINK, "not a regular file of its own"
                          + (" (it has other hard links)" if info.st_nlink > 1 else ""), str(path))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise Held(lock.read(200).strip() or "another process") from None
            # a file system without locks (NFS without lockd): go on, unprotected, and say so
            print(f"warning: {path} cannot be locked ({e.strerror}); nothing stops a second process from writing "
                  f"{directory}", file=sys.stderr)
        lock.seek(0)
        lock.truncate()
        lock.write(f"process {os.getpid()} on {socket.gethostname()}\n")
        lock.flush()
    except BaseException:
        with contextlib.suppress(OSError):  # (closing flushes again what a full disk refused)
            lock.close()
        if created:
            Path(path).unlink(missing_ok=True)
        raise
    return lock


def _remove_entry(path: Path) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


class OutputDirectory:
    """A directory of outputs written whole, a report's: `with OutputDirectory(target, ...) as stage:` the body
    writes every output into `stage` (a new directory inside `target`, so no name in it is a link); leaving the
    block moves them into `target`, replacing the earlier output's entries and removing those of it that this
    output has not (no stale figure stays), under a lock (`lock_directory`, `target/LOCK`): two writers of one
    directory never interleave, the second is refused naming the first. An error in the body leaves `target`
    as it was.

    `target` must be absent, empty, or an earlier output of this kind (`earlier(target)`): a link, a file, a
    directory holding anything else (a run's, a user's) is refused (`Refused`, one line) before anything is
    written. `owns(name)` tells this output's entries from the rest; beside an earlier output a user's other
    entries are kept (and named: `kept`)."""

    LOCK = ".report.lock"
    STAGE = ".report-"  # a stage's prefix (one left by a killed writer is removed by the next)

    class Refused(Exception):
        pass

    def __init__(self, target: Path, owns: Callable[[str], bool], earlier: Callable[[Path], bool],
                 what: str = "a report"):
        self.target, self.owns, self.earlier, self.what = target, owns, earlier, what
        self.kept: list[str] = []
        self.lock: TextIO | None = None
        self.stage: Path | None = None

    def _mine(self, name: str) -> bool:
        return name == self.LOCK or (name.startswith(self.STAGE) and name.endswith(".tmp"))

    def check(self) -> None:
        """Whether `target` may take this output (nothing is written): `Refused` with the reason."""
        target = self.target
        if target.is_symlink():
            raise self.Refused(f"{target} is a symbolic link: {self.what} is written into a directory of its own, "
                               "never through a link")
        if not target.exists():
            return
        if not target.is_dir():
            raise self.Refused(f"{target} exists and is not a directory")
        names = sorted(p.name for p in target.iterdir() if not self._mine(p.name))
        for name in names:
            if self.owns(name) and (target / name).is_symlink():
                raise self.Refused(f"{target / name} is a symbolic link: {self.what} never writes through a link "
                                   "(remove it, or give another directory)")
        if not names:
            return
        if not self.earlier(target):
            raise self.Refused(f"{target} holds other files ({names[0]!r}{' …' if len(names) > 1 else ''}) and no "
                               f"earlier output of {self.what}: give a new or empty directory")
        self.kept = [name for name in names if not self.owns(name)]

    def __enter__(self) -> Path:
        self.check()
        try:
            self.target.mkdir(parents=True, exist_ok=True)
            self.lock = lock_directory(self.target, self.LOCK)
        except Held as e:
            raise self.Refused(f"{self.target} is in use by {e}: one process writes {self.what} there at a time"
                               ) from None
        try:
            self.check()  # again, under the lock
            for old in self.target.glob(f"{self.STAGE}*.tmp"):  # a writer killed mid-way left its stage
                _remove_entry(old)
            self.stage = Path(tempfile.mkdtemp(dir=self.target, prefix=self.STAGE, suffix=".tmp"))
        except BaseException:
            self.lock.close()
            raise
        return self.stage

    def __exit__(self, kind, value, traceback) -> None:
        assert self.stage is not None and self.lock is not None  # set by __enter__
        try:
            if kind is None:
                self._commit()
        finally:
            if self.stage.exists():
                shutil.rmtree(self.stage, ignore_errors=True)
            self.lock.close()

    def _commit(self) -> None:
        assert self.stage is not None  # set by __enter__
        target, new, asides = self.target, {p.name for p in self.stage.iterdir()}, []
        for path in target.iterdir():  # the earlier output's entries this one has not
            if self.owns(path.name) and path.name not in new and not self._mine(path.name):
                _remove_entry(path)
        for name in sorted(new, key=lambda n: n == "report.md"):  # the report last: whole once it is there
            staged, final = self.stage / name, target / name
            if staged.is_dir() and final.is_dir() and not final.is_symlink():
                asides.append(Path(tempfile.mkdtemp(dir=target, prefix=self.STAGE, suffix=".tmp")))
                os.replace(final, asides[-1] / name)
            os.replace(staged, final)
        sync_directory(target)
        for aside in asides:
            shutil.rmtree(aside)
