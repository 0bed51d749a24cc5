"""Run untrusted Python (model-written code) in a contained child process.

Containment, in layers (each recorded in :attr:`SandboxResult.isolation`):

* a separate process per run, started through ``_jail.py`` in its own session;
* Linux namespaces: PID (when the program's init exits, every process it spawned is
  killed, so fork bombs and background daemons cannot outlive the run), mount (a private
  ``/proc`` shows only the sandbox's processes; the invoking user's home, ``/tmp``,
  ``/var/tmp`` and ``/dev/shm`` are replaced by throw-away tmpfs mounts, so writes outside
  the work directory vanish with the run) and network (only a downed loopback: no network).
  As root these need no user namespace; otherwise an unprivileged user namespace is used
  where the kernel allows it, and without namespaces the run still has the limits below;
* ``resource.setrlimit``: CPU seconds, address space (memory), processes, file size,
  open files, no core dumps;
* as root, each parallel worker slot runs under its own unprivileged uid, so ``RLIMIT_NPROC``
  is enforced (root ignores it) and nothing owned by root is readable or writable
  (without root the process limit counts all the invoking user's processes — documented);
* an environment rebuilt from scratch (no API keys, no proxies), a fresh temporary work
  directory, and a wall-clock timeout after which the whole process group is killed.
"""

from __future__ import annotations

import json
import os
import queue
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


@dataclass(frozen=True)
class SandboxJob:
    program: str
    stdin: str = ""
    files: dict[str, str] = field(default_factory=dict)  # extra files in the work dir
    tag: str = ""


@dataclass
class SandboxResult:
    status: str  # ok | failed | timeout | cpu_limit | memory_limit | file_limit | killed | setup_error
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
    dirs = ["/tmp", "/var/tmp", "/dev/shm"]
    if home not in ("/", "") and os.path.isdir(home):
        dirs.append(home)
    return dirs


class Sandbox:
    """Run Python programs contained; ``run`` for one, ``run_many`` for a parallel batch.

    ``workers`` parallel slots; as root slot ``i`` runs as uid ``base_uid + i``.
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
        self.base_uid = base_uid
        self.env = dict(SAFE_ENV if env is None else env)
        self._root = os.geteuid() == 0
        self._slots: queue.Queue[int] = queue.Queue()
        for i in range(self.workers):
            self._slots.put(i)

    # ------------------------------------------------------------------ one run
    def run(self, job: SandboxJob | str, *, slot: int = 0) -> SandboxResult:
        if isinstance(job, str):
            job = SandboxJob(job)
        lim = self.limits
        run_uid = self.base_uid + slot if self._root else None
        # Parent-only dir (stdout/stderr/status) next to the program's work dir.
        outer = Path(tempfile.mkdtemp(prefix="arena-sbx-"))
        outer.chmod(0o711)  # traversable, not listable, in case namespaces are unavailable
        work = outer / "work"
        work.mkdir()
        try:
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
            (outer / "stdin").write_text(job.stdin, encoding="utf-8")
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
                "run_uid": run_uid,
                "env": self.env,
                "limits": {
                    "cpu_seconds": lim.cpu_seconds, "memory_bytes": lim.memory_bytes,
                    "max_processes": lim.max_processes, "max_file_bytes": lim.max_file_bytes,
                    "max_open_files": lim.max_open_files,
                },
            }
            t0 = time.perf_counter()
            with open(outer / "stdin", "rb") as fin, open(outer / "stdout", "wb") as fout, open(outer / "stderr", "wb") as ferr:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(JAIL), json.dumps(cfg)],
                    stdin=fin, stdout=fout, stderr=ferr, pass_fds=(wfd,), start_new_session=True,
                    env={}, close_fds=True,
                )
            os.close(wfd)
            timed_out = False
            try:
                proc.wait(timeout=lim.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
            # Kill the session either way: the namespace init dies, and the kernel kills the rest.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            if run_uid is not None:
                _sweep_uid(run_uid)
            wall = time.perf_counter() - t0
            with os.fdopen(rfd, "rb") as f:
                raw = f.read()
            status = {"isolation": {}, "exit": None, "signal": signal.SIGKILL}
            for line in raw.decode("utf-8", errors="replace").splitlines():
                if line.strip():
                    status.update(json.loads(line))
            stdout = _read_capped(outer / "stdout", lim.max_output_bytes)
            stderr = _read_capped(outer / "stderr", lim.max_output_bytes)
            return SandboxResult(
                status=_classify(status, stderr, timed_out), returncode=status.get("exit"), signal=status.get("signal"),
                stdout=stdout, stderr=stderr, wall_seconds=wall, isolation=status.get("isolation", {}), tag=job.tag,
            )
        finally:
            shutil.rmtree(outer, ignore_errors=True)

    # ------------------------------------------------------------------ batch
    def run_slotted(self, job: SandboxJob | str) -> SandboxResult:
        """Run ``job`` on the next free worker slot, waiting for one (thread-safe; at most
        ``workers`` runs at a time however many threads call it)."""
        slot = self._slots.get()
        try:
            return self.run(job, slot=slot)
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


def _sweep_uid(uid: int, patience: float = 5.0) -> None:
    """Kill and wait out anything still running as the slot's uid (a fork bomb's children
    can outlive the namespace init for a moment), so the next run starts with a clean count."""
    deadline = time.monotonic() + patience
    while True:
        alive = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.stat(f"/proc/{name}").st_uid == uid:
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


def _read_capped(path: Path, cap: int) -> str:
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    text = data[:cap].decode("utf-8", errors="replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


def _classify(status: dict, stderr: str, timed_out: bool) -> str:
    if timed_out:
        return "timeout"
    sig = status.get("signal")
    code = status.get("exit")
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and (status.get("cpu_exceeded") or "cpu" in stderr.lower())):
        return "cpu_limit"
    if sig == signal.SIGXFSZ or "File too large" in stderr:
        return "file_limit"
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return "memory_limit"
    if sig is not None:
        return "killed"
    if code == 120 and "sandbox setup failed" in stderr:
        return "setup_error"
    return "ok" if code == 0 else "failed"
