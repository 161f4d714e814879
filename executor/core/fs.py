"""Files and folders under EXECUTOR_HOME: private to their owner, and locks held for a process's lifetime."""

from __future__ import annotations

import fcntl
import io
import os
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, cast

from executor.core.errors import OutputError

PRIVATE_UMASK = 0o077  # files 0600, folders 0700


def private_dir(path: Path) -> Path:
    """A folder only its owner may enter (0700), created if missing, with its missing parents. A folder that
    was there already keeps its mode: it may be someone else's, or shared (see `home_folder`)."""
    path = Path(path)
    if not path.is_dir():
        with private_umask():
            path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    return path


def home_folder(path: Path) -> Path:
    """Where a home named `path` keeps its data: `path` itself, unless that is a folder others may write in
    (/tmp, a group's folder), whose mode is not ours to change: then a folder of this user's own inside it."""
    path = Path(path)
    real = Path(os.path.realpath(path))
    shown = str(path) if real == path.absolute() else f"{path} (-> {real})"
    try:
        info = path.stat()
    except OSError:
        tree = _system_tree(real)
        if tree is not None:  # as root /etc and /usr are writable: the home would be made among the system's files
            raise PermissionError(
                f"{shown} is inside the system folder {tree}, not a place for a home; set EXECUTOR_HOME to a folder "
                "of this user's"
            ) from None
        return path  # created private when first needed
    if not path.is_dir():
        raise PermissionError(f"{shown} is not a folder; set EXECUTOR_HOME to a folder of this user's")
    if _is_system_folder(real):
        raise PermissionError(f"{shown} is a system folder, not a home; set EXECUTOR_HOME to a folder of this user's")
    if not os.access(path, os.W_OK | os.X_OK):
        if os.statvfs(path).f_flag & os.ST_RDONLY:  # not this user's rights: the mount (hostile24b finding 7)
            raise PermissionError(
                f"{shown} is on a read-only file system; mount it read-write, or copy the home to a writable place "
                "and set EXECUTOR_HOME to it"
            )
        raise PermissionError(f"{shown} is not writable by this user; set EXECUTOR_HOME to a folder of this user's")
    if not info.st_mode & 0o022:
        if info.st_uid != os.getuid():
            raise PermissionError(
                f"{shown} belongs to another user (uid {info.st_uid}); set EXECUTOR_HOME to a folder of this user's"
            )
        return path
    own = path / f"executor-{os.getuid()}"
    try:
        mine = os.lstat(own)
    except FileNotFoundError:
        return own
    if not (os.path.isdir(own) and not os.path.islink(own) and mine.st_uid == os.getuid()):
        raise PermissionError(f"{own} is not a folder of this user's; set EXECUTOR_HOME to a private folder")
    return own


# folders of the system itself: a home there (a symlink to /etc, EXECUTOR_HOME=/proc/1) would write the user's
# databases among the system's files, or fail with the kernel's raw errors
_SYSTEM_FOLDERS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)
# nothing below these is a user's: a fixed list, not a permissions check (root may write anywhere). /var and /run
# are not among them: /var/lib/executor and /run/user/UID are homes a service or a session may use
_SYSTEM_TREES = ("/proc", "/sys", "/dev", "/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")


def _system_tree(real: Path) -> str | None:
    """The system folder that `real` (a resolved path) lies below, if any."""
    text = str(real)
    return next((tree for tree in _SYSTEM_TREES if text.startswith(tree + "/")), None)


def _is_system_folder(real: Path) -> bool:
    return str(real) in _SYSTEM_FOLDERS or _system_tree(real) is not None


def private_file(path: Path) -> Path:
    """Create `path` empty and 0600 if it is missing (before a library opens it with its own mode)."""
    path = Path(path)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    os.chmod(path, 0o600)
    return path


@contextmanager
def private_umask():
    """Everything created meanwhile (by this process or a child it starts) is private to its owner.
    The umask is process-wide: only for short stretches that start a server or create files."""
    old = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(old)


@contextmanager
def stderr_to(path: Path, descriptors: tuple[int, ...] = (2,)):
    """Send what this process and the children it starts meanwhile write to file descriptor 2 (and the other
    `descriptors`: 1 for a server that prints its errors on stdout) into `path` (a server's own log lines must
    not reach the terminal: an error is one line)."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    saved = {d: os.dup(d) for d in descriptors}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for d in descriptors:
        os.dup2(fd, d)
    os.close(fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for d, copy in saved.items():
            os.dup2(copy, d)
            os.close(copy)


# path -> [descriptor, holders]: a flock belongs to an open file, so two opens in one process would
# lock each other out; runtimes in one process share the descriptor instead.
_HELD: dict[str, list[int]] = {}


class HeldLock:
    """An exclusive `flock` on a file, held until `release()` or the process ends (the kernel drops it then,
    even after kill -9). The file is never deleted: deleting a lock file another process waits on, or holds,
    is how two processes end up "holding" it at once. Within one process the lock is shared."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._key = str(self.path.absolute())
        self.held = False

    def try_acquire(self) -> bool:
        if self.held:
            return True
        if self._key in _HELD:
            _HELD[self._key][1] += 1
        else:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            _HELD[self._key] = [fd, 1]
        self.held = True
        return True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        entry = _HELD[self._key]
        entry[1] -= 1
        if entry[1] == 0:
            del _HELD[self._key]
            os.close(entry[0])  # closing the descriptor releases the flock


# the standard descriptors (0 stdin, 1 stdout, 2 stderr) found closed when the program started (`standard_streams`)
closed_at_start: frozenset[int] = frozenset()


def standard_streams() -> frozenset[int]:
    """Make the three standard streams safe to use, once, at start-up; returns the descriptors found closed.

    A descriptor the caller closed (`2>&-`, `<&-`, a host that spawns us so) is the null device's again, and its
    Python stream is a real one instead of None: `os.dup(1)` took the free descriptor 2, pointing the MCP protocol
    at stderr, and every `sys.stderr.flush()` raised AttributeError. A descriptor opened later takes the lowest free
    number, so this must run before anything opens a file. stderr's writes never raise: a full disk or a closed
    pipe behind it must not end a command or change its exit code (its lines are lost, nothing else)."""
    import sys

    global closed_at_start
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:  # the lower ones are open by now: the null device opens on this very number
            os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            closed.add(fd)
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (the process's own, never closed)
    if sys.stdout is None:
        sys.stdout = _Stdout(open(1, "wb", closefd=False), encoding="utf-8")  # noqa: SIM115
    elif sys.stdout is sys.__stdout__ and isinstance(sys.stdout, io.TextIOWrapper):  # a test's capture: left alone
        out = sys.stdout
        sys.stdout = _Stdout(out.buffer, encoding=out.encoding, errors=out.errors, line_buffering=out.line_buffering)
    if sys.stderr is None or sys.stderr is sys.__stderr__:  # a test's captured stderr is left alone
        stream = sys.stderr or open(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = cast(TextIO, _Unfailing(stream))
    closed_at_start = frozenset(closed)
    return closed_at_start


class _Stdout(io.TextIOWrapper):
    """stdout whose failed writes say they are stdout's (`>/dev/full`, a full disk behind `> file`): they read
    "error: OSError: [Errno 28] No space left on device", as if the command's own work had failed on the home's disk.
    A reader gone (EPIPE, `| head`) is left as it is: the command line handles that on its own."""

    def write(self, text: str) -> int:
        with _as_stdouts():
            return super().write(text)

    def flush(self) -> None:
        with _as_stdouts():
            super().flush()


@contextmanager
def _as_stdouts():
    """An OSError of stdout's write or flush as stdout's (`OutputError`); a reader gone (EPIPE) as it is."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write to stdout: {exc.strerror or exc}") from None


class _Unfailing:
    """stderr whose failed writes are dropped: the lines a command, a library or the MCP server log there are
    for a person, and a stderr that cannot take them (`2>/dev/full`, a host logging to a full disk) ended
    `executor mcp` before it answered, and turned a bad argument's exit 2 into 1."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            pass

    def __getattr__(self, name: str):  # fileno, isatty, encoding, buffer, ...: the stream's own
        return getattr(self._stream, name)
