"""Files a run writes, written safely: never through a symbolic link, whole or not at all, and recorded, so
that a run later removes only what it wrote.

- `write_atomically`: a new temp file made exclusively in the target's directory (`tempfile.mkstemp`: never
  an existing name, never a link), filled, synced, then renamed over the target (a link there is replaced,
  its target untouched);
- `open_append`: a file opened to append with `O_NOFOLLOW` (a link there is an error, not followed);
- `Written`: the run directory's record of what the run created (`OUT/.written`, a relative path a line),
  which pruning and `--overwrite` read: they remove those entries only, never through a link;
- `no_links`: a path inside the run directory whose every component below it is a real file or directory.

The lowest layer that writes run files (the replay's snapshots, Redis's configuration) lives here, and the
driver above uses it too.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import stat
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)
RECORD = ".written"


def sync_directory(path: Path) -> None:
    """A directory's entries (renames into it) on the disk; a file system that cannot: nothing."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass  # a file system that cannot sync a directory


def write_atomically(path: Path, write, mode: str = "w", private: bool = False) -> None:
    """`path`, whole or not at all: `write(file)` fills a new temp file in its directory, which reaches the disk
    (fsync) before it is renamed over `path`, and the rename too (the directory's fsync): a kill, a power cut or
    a full disk leaves the old file, or none. The temp file's name is new (exclusive create), so no planted file
    or link is written through; a link at `path` itself is replaced by the file. `private`: readable by its
    owner only (a file holding a password), else as the umask says. OSError (and what `write` raises) goes
    up; no temp file is left."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600 if private else 0o666 & ~_UMASK)
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def open_append(path: Path, newline: str | None = None):
    """`path` opened to append text (created if absent), never through a link: OSError where it is a symbolic
    link (ELOOP) or a file with other hard links (EMLINK)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:  # another name for a file elsewhere: never written
        os.close(fd)
        raise OSError(errno.EMLINK, "not a regular file of its own (a hard link, or not a file)", str(path))
    return os.fdopen(fd, "a", newline=newline)


def _inside(relative: str | Path) -> bool:
    parts = Path(relative).parts
    return bool(parts) and not Path(relative).is_absolute() and ".." not in parts


def no_links(out: Path, relative: str | Path) -> bool:
    """Whether `out/relative` stays inside `out` with no symbolic link on the way (its own name included)."""
    if not _inside(relative):
        return False
    path = out
    for part in Path(relative).parts:
        path = path / part
        if path.is_symlink():
            return False
    return True


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
    for relative in reversed(paths):
        is_dir = relative.endswith("/")
        relative = Path(relative.rstrip("/"))
        if not _inside(relative) or (relative.parent != Path(".") and not no_links(out, relative.parent)):
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
