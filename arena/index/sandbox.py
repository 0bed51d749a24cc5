"""Run untrusted Python (model-written code) in a contained child process.

Containment, in layers (each recorded in :attr:`SandboxResult.isolation`):

* a separate process per run, started through ``_jail.py`` in its own session;
* Linux namespaces: PID (when the program's init exits, every process it spawned is
  killed, so fork bombs and background daemons cannot outlive the run), mount (a private
  ``/proc`` shows only the sandbox's processes; the invoking user's home, ``/tmp``,
  ``/var/tmp``, ``/dev/shm`` and ``/run`` (so ``/run/lock`` and ``/var/lock``) are replaced
  by throw-away tmpfs mounts and every other mount is read-only, so nothing written in one
  run is seen by the next or by a concurrent worker; the work directory is its own tmpfs
  capped at ``SandboxLimits.work_size``, so a program cannot fill the host disk), IPC (SysV
  IPC and POSIX message queues of its own) and network (only a downed loopback).
  As root these need no user namespace; otherwise an unprivileged user namespace is used
  where the kernel allows it, and without namespaces the run still has the limits below;
* ``resource.setrlimit``: CPU seconds, address space (memory), processes, file size,
  open files, no core dumps;
* as root, each parallel worker slot runs under its own unprivileged uid (from a block of
  uids each Sandbox locks for itself, so two arena processes never share one), so
  ``RLIMIT_NPROC`` is enforced (root ignores it) and nothing owned by root is readable or writable
  (without root the process limit counts all the invoking user's processes — documented);
* an environment rebuilt from scratch (no API keys, no proxies), a fresh temporary work
  directory, and a wall-clock timeout after which the whole process group is killed.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

JAIL = Path(__file__).with_name("_jail.py")
EXIT_MEMORY, EXIT_FSIZE = 121, 122  # set by the jail's wrapper (see _jail.py)
SAFE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 10
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 64
    max_file_bytes: int = 32 * 1024**2
    max_open_files: int = 256
    wall_seconds: float = 30.0
    max_output_bytes: int = 1024**2
    tmpfs_size: str = "64m"
    work_size: str = "128m"  # the work directory's own tmpfs


@dataclass(frozen=True)
class SandboxJob:
    program: str
    stdin: str = ""
    files: dict[str, str] = field(default_factory=dict)  # extra files in the work dir
    tag: str = ""


@dataclass
class SandboxResult:
    status: str  # ok | failed | timeout | cpu_limit | memory_limit | file_limit | killed | setup_error
    # ok only says the process exited 0: a grader needs positive evidence on top of it
    # (see arena.index.graders.code), since a program can exit 0 whenever it likes.
    returncode: int | None
    signal: int | None
    stdout: str
    stderr: str
    wall_seconds: float
    isolation: dict
    tag: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


def _hidden_dirs() -> list[str]:
    home = os.path.expanduser("~")
    dirs = ["/tmp", "/var/tmp", "/dev/shm", "/run", "/var/lock"]
    if home not in ("/", "") and os.path.isdir(home):
        dirs.append(home)
    return dirs


class Sandbox:
    """Run Python programs contained; ``run`` for one, ``run_many`` for a parallel batch.

    ``workers`` parallel slots; as root slot ``i`` runs as uid ``base_uid + i`` (and a
    second process of that slot, a test harness, as ``base_uid + 1000 + i``). ``base_uid``
    is where the search for a free block of :data:`UID_BLOCK` uids starts: each Sandbox
    holds an exclusive lock on its block for its lifetime, so two Sandboxes (in one
    process or in two arena processes on one host) never share a uid and never kill each
    other's programs when they sweep their uids.
    ``network=False`` (default) puts the program in an empty network namespace.
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        workers: int = 2,
        python: str | None = None,
        network: bool = False,
        base_uid: int = 61000,
        env: dict[str, str] | None = None,
    ):
        self.limits = limits or SandboxLimits()
        self.workers = max(1, workers)
        self.python = python or sys.executable
        self.network = network
        self.base_uid, self._uid_lock = _claim_uid_block(base_uid, workers=self.workers) if os.geteuid() == 0 else (base_uid, None)
        self.env = dict(SAFE_ENV if env is None else env)
        self._root = os.geteuid() == 0
        self._slots: queue.Queue[int] = queue.Queue()
        for i in range(self.workers):
            self._slots.put(i)

    # ------------------------------------------------------------------ one run
    def run(self, job: SandboxJob | str, *, slot: int = 0, output_cap: int | None = None) -> SandboxResult:
        """Run ``job`` to completion. ``output_cap``: bytes of stdout to keep (default
        ``limits.max_output_bytes``), for callers whose protocol rides on stdout."""
        if isinstance(job, str):
            job = SandboxJob(job)
        live = self.spawn(job, slot=slot)
        live.output_cap = output_cap
        return live.finish(timed_out=not live.wait_exit(self.limits.wall_seconds))

    def spawn(self, job: SandboxJob, *, slot: int = 0, uid_offset: int = 0, interactive: bool = False) -> "LiveRun":
        """Start ``job`` and return at once. ``interactive``: the program's stdin and stdout are
        pipes (``LiveRun.proc.stdin`` / ``.stdout``) instead of files; ``uid_offset`` gives a
        second process of the same slot (a test harness) a uid of its own, so the two cannot
        signal or read each other. The caller must call :meth:`LiveRun.finish`."""
        lim = self.limits
        run_uid = self.base_uid + uid_offset + slot if self._root else None
        # Parent-only dir (stdout/stderr/status) next to the program's staged work dir.
        outer = Path(tempfile.mkdtemp(prefix="arena-sbx-"))
        try:
            outer.chmod(0o711)  # traversable, not listable, in case namespaces are unavailable
            work = outer / "work"
            work.mkdir()
            (work / "main.py").write_text(job.program, encoding="utf-8")
            for name, text in job.files.items():
                target = (work / name).resolve()
                if work.resolve() not in target.parents:
                    raise ValueError(f"sandbox file name escapes the work dir: {name}")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            if run_uid is not None:
                for p in [work, *work.rglob("*")]:
                    os.chown(p, run_uid, run_uid)
            rfd, wfd = os.pipe()
            prefixes = sorted({sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(self.python))})
            cfg = {
                "status_fd": wfd,
                "workdir": str(work),
                "main": "main.py",
                "python": self.python,
                "no_network": not self.network,
                "hide": _hidden_dirs(),
                "rebind": prefixes,
                "tmpfs_size": lim.tmpfs_size,
                "work_size": lim.work_size,
                "run_uid": run_uid,
                "env": self.env,
                "limits": {
                    "cpu_seconds": lim.cpu_seconds, "memory_bytes": lim.memory_bytes,
                    "max_processes": lim.max_processes, "max_file_bytes": lim.max_file_bytes,
                    "max_open_files": lim.max_open_files,
                },
            }
            t0 = time.perf_counter()
            with open(outer / "stderr", "wb") as ferr:
                if interactive:
                    proc = subprocess.Popen(
                        [sys.executable, "-I", "-S", str(JAIL), json.dumps(cfg)], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=ferr, pass_fds=(wfd,), start_new_session=True, env={}, close_fds=True,
                    )
                else:
                    (outer / "stdin").write_text(job.stdin, encoding="utf-8")
                    with open(outer / "stdin", "rb") as fin, open(outer / "stdout", "wb") as fout:
                        proc = subprocess.Popen(
                            [sys.executable, "-I", "-S", str(JAIL), json.dumps(cfg)], stdin=fin, stdout=fout,
                            stderr=ferr, pass_fds=(wfd,), start_new_session=True, env={}, close_fds=True,
                        )
            os.close(wfd)
        except BaseException:
            shutil.rmtree(outer, ignore_errors=True)
            raise
        return LiveRun(self, job, proc, rfd, outer, run_uid, t0)

    # ------------------------------------------------------------------ batch
    def run_slotted(self, job: SandboxJob | str, *, output_cap: int | None = None) -> SandboxResult:
        """Run ``job`` on the next free worker slot, waiting for one (thread-safe; at most
        ``workers`` runs at a time however many threads call it)."""
        slot = self._slots.get()
        try:
            return self.run(job, slot=slot, output_cap=output_cap)
        finally:
            self._slots.put(slot)

    def run_many(self, jobs: Sequence[SandboxJob], *, on_result: Callable[[int, SandboxResult], None] | None = None) -> list[SandboxResult]:
        """Run jobs on ``workers`` parallel slots; results in input order."""

        def one(i: int) -> SandboxResult:
            res = self.run_slotted(jobs[i])
            if on_result is not None:
                on_result(i, res)
            return res

        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(one, range(len(jobs))))


UID_BLOCK = 2048


def _claim_uid_block(start: int, *, workers: int, tries: int = 256) -> tuple[int, object]:
    """The first block of UID_BLOCK uids from ``start`` that no other live Sandbox holds,
    and the open lock file that holds it (released when closed, or when the process dies)."""
    if workers > UID_BLOCK // 2:
        raise ValueError(f"at most {UID_BLOCK // 2} sandbox workers")
    lock_dir = Path(tempfile.gettempdir())
    for k in range(tries):
        base = start + k * UID_BLOCK
        f = open(lock_dir / f"arena-sandbox-uids-{base}.lock", "a+b")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            continue
        return base, f
    raise RuntimeError(f"no free block of sandbox uids from {start} ({tries} blocks held)")


@dataclass
class LiveRun:
    """A started sandbox run; :meth:`finish` kills what is left and collects the result."""

    sandbox: Sandbox
    job: SandboxJob
    proc: subprocess.Popen
    status_fd: int
    outer: Path
    run_uid: int | None
    t0: float

    status_raw: bytes = b""
    output_cap: int | None = None

    def _read_status(self) -> None:
        while chunk := os.read(self.status_fd, 1 << 16):
            self.status_raw += chunk

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the jail to exit; True if it did. Watches the
        status pipe, which reaches end-of-file exactly when the jail exits (Popen.wait with a
        timeout polls with sleeps of up to 50 ms, a cost paid on every run)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.status_fd], [], [], left)[0]:
                return False
            chunk = os.read(self.status_fd, 1 << 16)
            if not chunk:
                self.proc.wait()
                return True
            self.status_raw += chunk

    def kill(self) -> None:
        """Have the jail kill the namespace's init first, so it lives to reap every process
        in it (nothing is left for the host's init); then the whole session, whatever is left."""
        if self.proc.poll() is None:
            try:  # the jail kills its init on SIGTERM (see _jail.py)
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=2)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def finish(self, *, timed_out: bool = False, grace: float = 0.0) -> SandboxResult:
        """``grace``: seconds to let the program exit by itself after its stdin closes, so
        the jail reaps it (a namespace init killed under the jail's feet lingers as a zombie
        until the host's init reaps it)."""
        lim = self.sandbox.limits
        try:
            if grace > 0 and not timed_out and self.proc.poll() is None:
                if self.proc.stdin is not None:
                    try:
                        self.proc.stdin.close()
                    except OSError:
                        pass
                self.wait_exit(grace)
            self.kill()
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
            self.proc.wait()
            self._read_status()
            os.close(self.status_fd)
            status: dict = {"isolation": {}, "exit": None, "signal": signal.SIGKILL}
            for line in self.status_raw.decode("utf-8", errors="replace").splitlines():
                try:
                    status.update(json.loads(line))
                except ValueError:
                    continue
            # The jail reports last, after reaping its whole PID namespace: then nothing of
            # the run can be left. Otherwise kill whatever still runs under the slot's uid.
            reaped = status["isolation"].get("pid_ns") and "cpu_seconds" in status
            if self.run_uid is not None and not reaped:
                _sweep_uid(self.run_uid)
            wall = time.perf_counter() - self.t0
            out = self.outer / "stdout"
            stdout = _read_capped(out, self.output_cap or lim.max_output_bytes) if out.exists() else ""
            stderr = _read_capped(self.outer / "stderr", lim.max_output_bytes)
            return SandboxResult(
                status=_classify(status, timed_out), returncode=status.get("exit"), signal=status.get("signal"),
                stdout=stdout, stderr=stderr, wall_seconds=wall, isolation=status.get("isolation", {}), tag=self.job.tag,
            )
        finally:
            shutil.rmtree(self.outer, ignore_errors=True)


def _sweep_uid(uid: int, patience: float = 5.0) -> None:
    """Kill and wait out anything still running as the slot's uid (a fork bomb's children
    can outlive the namespace init for a moment), so the next run starts with a clean count."""
    deadline = time.monotonic() + patience
    while True:
        alive = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.stat(f"/proc/{name}").st_uid == uid and not _zombie(name):
                        alive.append(int(name))
                except OSError:
                    continue
        if not alive or time.monotonic() > deadline:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def _zombie(pid: str) -> bool:
    """Dead and waiting to be reaped by its parent (or the host's init): nothing to kill."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def _read_capped(path: Path, cap: int) -> str:
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    text = data[:cap].decode("utf-8", errors="replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


def _classify(status: dict, timed_out: bool) -> str:
    """From the wall clock, the signal, the exit code the jail's wrapper sets for
    ``MemoryError`` / "file too large", and the CPU time used: never from the program's
    output, which it controls (a correct program may print "MemoryError")."""
    if timed_out:
        return "timeout"
    if status.get("setup_error"):
        return "setup_error"
    sig = status.get("signal")
    code = status.get("exit")
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and status.get("cpu_exceeded")):
        return "cpu_limit"
    if sig == signal.SIGXFSZ or code == EXIT_FSIZE:
        return "file_limit"
    if code == EXIT_MEMORY:
        return "memory_limit"
    if sig is not None:
        return "killed"
    return "ok" if code == 0 else "failed"
