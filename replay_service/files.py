"""Files written safely, the rules the replay service needs (the lowest package that writes files: the replay's
snapshots, Redis's configuration); `beta_dqn.files` builds the run directory's rules on them.

- `write_atomically`: a new temp file made exclusively in the target's directory (`tempfile.mkstemp`: never
  an existing name, never a link), filled, synced, then renamed over the target (a link there is replaced,
  its target untouched);
- `no_links`: a path inside a directory whose every component below it is a real file or directory;
- `read_bounded`: a file given by flag, read with a size cap, regular files only, UTF-8 (`Unreadable` if not).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


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


def inside(relative: str | Path) -> bool:
    parts = Path(relative).parts
    return bool(parts) and not Path(relative).is_absolute() and ".." not in parts


def no_links(out: Path, relative: str | Path) -> bool:
    """Whether `out/relative` stays inside `out` with no symbolic link on the way (its own name included)."""
    if not inside(relative):
        return False
    path = out
    for part in Path(relative).parts:
        path = path / part
        if path.is_symlink():
            return False
    return True


class Unreadable(ValueError):
    """A file `read_bounded` refused: its text is what is wrong with it (`cannot be read (…)`, `is not a regular
    file`, `is larger than …`, `is not UTF-8 text (byte N)`), for the caller to put after the file's name;
    `cause`: the system's words where the file could not be opened or read (else None)."""

    def __init__(self, text: str, cause: str | None = None):
        super().__init__(text)
        self.cause = cause


def read_bounded(path: Path, limit: int) -> str:
    """The text of a file given by flag: a regular file (a FIFO, a device or a directory is refused without
    waiting or reading: opened non-blocking, then `fstat`) of at most `limit` bytes, UTF-8; anything else
    `Unreadable`. A link is followed (a user may link a file they name); what is read is what `fstat` saw."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    except OSError as e:
        raise Unreadable(f"cannot be read ({e.strerror})", e.strerror) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "special")
            raise Unreadable(f"is not a regular file ({kind})")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise Unreadable(f"cannot be read ({e.strerror})", e.strerror) from None
    finally:
        os.close(fd)
    if size > limit:
        raise Unreadable(f"is larger than {limit // 1024} KiB")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise Unreadable(f"is not UTF-8 text (byte {e.start})") from None
