"""Sandbox launcher: isolates itself, then execs the untrusted Python program.

Run by :mod:`arena.index.sandbox` as ``python -I _jail.py CONFIG_JSON`` (a standalone file so
it starts without importing the package). Single-threaded, so ``fork`` here is safe.

Steps: unshare PID + mount + IPC (+ network) namespaces (plus a user namespace when not
root); make mounts private; hide the invoking user's home and every writable shared path
(``/tmp``, ``/var/tmp``, ``/dev/shm``, ``/run`` and so ``/run/lock``) under fresh tmpfs
mounts (re-binding the Python installation); remount everything else read-only, so no
world-writable directory the host forgot about can carry files between runs or workers;
give ``/dev/mqueue`` a fresh mqueue (the IPC namespace already separates SysV IPC); copy
the work directory into its own size-capped tmpfs, so a program cannot fill the host disk
and its files vanish with the run. Then fork the namespace's init, which mounts a private
``/proc``, applies rlimits, drops to the slot's uid (root only) and execs Python. When the
init exits, the kernel kills every other process in the namespace, so fork bombs and
daemons die with it. The outcome (exit code, signal, rusage, which isolation steps held)
is written as JSON to the status fd.

The program runs under a tiny wrapper that turns an uncaught ``MemoryError`` into exit
code 121 and an uncaught "file too large" into 122, so the parent classifies those limits
from the exit status rather than from text the program could print itself.
"""

import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
# Per-mount flags a bind remount must repeat: in a user namespace they are locked, and
# dropping one makes the remount fail with EPERM.
_LOCKED = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
           "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
EXIT_MEMORY, EXIT_FSIZE, EXIT_SETUP = 121, 122, 120
# Runs the program as __main__ (what ``python main.py`` does) and maps the two resource
# errors to exit codes; anything else behaves as under plain ``python``.
WRAPPER = """
def _run():
    import errno, os, sys, traceback
    path = sys.argv[1]
    del sys.argv[0]
    g = sys.modules["__main__"].__dict__
    g.pop("_run", None)
    g["__file__"] = path
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, g)
    except MemoryError:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(%d)
    except OSError as e:
        if e.errno != errno.EFBIG:
            raise
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(%d)
_run()
""" % (EXIT_MEMORY, EXIT_FSIZE)

libc = ctypes.CDLL(None, use_errno=True)


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _mounts():
    """(mount point, per-mount options) of every mount in this namespace, parents first."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            point = parts[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
            out.append((point, parts[5].split(",")))
    return out


def _read_only_everything(skip, iso):
    """Remount every mount read-only except ``skip`` (our tmpfs mounts) and /proc, /sys
    (pseudo file systems the unprivileged uid cannot write anyway)."""
    failed = []
    for point, opts in _mounts():
        if point in skip or any(point == s or point.startswith(s.rstrip("/") + "/") for s in skip if s != "/"):
            continue
        if "ro" in opts or point.startswith(("/proc", "/sys")):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for o in opts:
            flags |= _LOCKED.get(o, 0)
        try:
            _mount(None, point, None, flags)
        except OSError:
            failed.append(point)
    iso["read_only"] = not failed
    if failed:
        iso["read_only_failed"] = failed[:20]


def _copy_tree(src, dst, owner):
    """Copy the staged work directory into the run's tmpfs (file contents only)."""
    for name in os.listdir(src):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if os.path.isdir(s) and not os.path.islink(s):
            os.mkdir(d, 0o755)
            _copy_tree(s, d, owner)
        elif os.path.isfile(s) and not os.path.islink(s):
            with open(s, "rb") as fi, open(d, "wb") as fo:
                fo.write(fi.read())
        else:
            continue
        if owner is not None:
            os.chown(d, owner, owner)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    status_fd = cfg["status_fd"]
    # Closed by exec: the program never holds it, but a failed setup can still report.
    os.set_inheritable(status_fd, False)
    iso = {"pid_ns": False, "mount_ns": False, "net_ns": False, "ipc_ns": False,
           "uid": cfg["run_uid"] if os.geteuid() == 0 else os.geteuid(), "tmpfs": [], "work_tmpfs": None}
    root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | (CLONE_NEWNET if cfg["no_network"] else 0)
    if not root:
        flags |= CLONE_NEWUSER
    if libc.unshare(flags) == 0:
        iso["pid_ns"] = iso["mount_ns"] = iso["ipc_ns"] = True
        iso["net_ns"] = bool(flags & CLONE_NEWNET)
        if not root:
            try:  # map ourselves to root inside the new user namespace so we may mount
                _write("/proc/self/setgroups", "deny")
                _write("/proc/self/uid_map", f"0 {uid} 1")
                _write("/proc/self/gid_map", f"0 {gid} 1")
            except OSError:
                pass
    ns_ok = iso["mount_ns"]
    work = cfg["workdir"]
    run_uid = cfg["run_uid"] if root else None
    if ns_ok:
        try:
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            # Keep handles on what must stay visible before tmpfs mounts hide it.
            keep = {p: os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in cfg["rebind"] if os.path.isdir(p)}
            work_fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
            for d in cfg["hide"]:
                if os.path.isdir(d) and not os.path.islink(d):
                    try:
                        _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cfg['tmpfs_size']},mode=1777")
                        iso["tmpfs"].append(d)
                    except OSError:
                        pass
            if "/run" in iso["tmpfs"]:
                os.mkdir("/run/lock", 0o1777)  # what /var/lock points at; private to this run
                os.chmod("/run/lock", 0o1777)
            for p, fd in keep.items():
                if any(p == h or p.startswith(h.rstrip("/") + "/") for h in iso["tmpfs"]):
                    os.makedirs(p, exist_ok=True)
                    _mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
            if os.path.isdir("/dev/mqueue"):
                try:  # the IPC namespace's own POSIX message queues
                    _mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
                    iso["mqueue"] = True
                except OSError:
                    iso["mqueue"] = False
            _read_only_everything(set(iso["tmpfs"]) | set(keep), iso)
            for p in keep:  # the re-bound Python installation: readable, not writable
                if any(p == h or p.startswith(h.rstrip("/") + "/") for h in iso["tmpfs"]):
                    opts = next((o for m, o in reversed(_mounts()) if m == p), [])
                    try:
                        _mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | sum(_LOCKED.get(o, 0) for o in set(opts)))
                    except OSError:
                        iso["read_only"] = False
            if "/tmp" in iso["tmpfs"]:
                inside = "/tmp/work"
                os.mkdir(inside, 0o755)
                _mount("tmpfs", inside, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cfg['work_size']},mode=0755")
                _copy_tree(f"/proc/self/fd/{work_fd}", inside, run_uid)
                if run_uid is not None:
                    os.chown(inside, run_uid, run_uid)
                iso["work_tmpfs"] = cfg["work_size"]
                work = inside
            os.close(work_fd)
        except OSError as exc:
            iso["mount_error"] = str(exc)
    limits = cfg["limits"]
    # Isolation first, on its own line, so a run killed at the wall clock still reports it.
    os.write(status_fd, (json.dumps({"isolation": iso}) + "\n").encode())
    # Orphans of the namespace come back to us (not the host's init), so we can reap them all.
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    pid = os.fork()
    if pid == 0:
        try:
            if iso["pid_ns"]:
                try:
                    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
                except OSError:
                    pass
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
            resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits["max_file_bytes"], limits["max_file_bytes"]))
            resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"], limits["max_processes"]))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits["max_open_files"], limits["max_open_files"]))
            if run_uid is not None:
                os.setgroups([])
                os.setgid(run_uid)
                os.setuid(run_uid)
            os.chdir(work)
            env = dict(cfg["env"], HOME=work, TMPDIR=work)
            os.execve(cfg["python"], [cfg["python"], "-I", "-B", "-c", WRAPPER, cfg["main"]], env)
        except BaseException as exc:  # setup failed: say so on the status fd, distinct exit code
            try:
                os.write(status_fd, (json.dumps({"setup_error": repr(exc)}) + "\n").encode())
            finally:
                os._exit(EXIT_SETUP)
    # The parent stops an overlong run with SIGTERM to this process, which kills the init and
    # lives on to reap the namespace. Only we may kill it by pid: until we reap it, its pid
    # cannot be reused.
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
    _, status, usage = os.wait4(pid, 0)
    while True:  # the kernel has SIGKILLed the rest of the namespace: reap it
        try:
            os.wait()
        except ChildProcessError:
            break
    cpu = usage.ru_utime + usage.ru_stime
    # Under load the kernel may deliver the hard limit's SIGKILL rather than SIGXCPU; the CPU
    # time used tells the two apart from a kill for another reason.
    out = {"cpu_seconds": cpu, "cpu_exceeded": cpu >= limits["cpu_seconds"], "max_rss_kb": usage.ru_maxrss}
    if os.WIFSIGNALED(status):
        out["signal"] = os.WTERMSIG(status)
        out["exit"] = None
    else:
        out["exit"] = os.WEXITSTATUS(status)
        out["signal"] = None
    os.write(status_fd, (json.dumps(out) + "\n").encode())
    os.close(status_fd)
    os._exit(0)


if __name__ == "__main__":
    main()
