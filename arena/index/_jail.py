"""Sandbox launcher: isolates itself, then execs the untrusted Python program.

Run by :mod:`arena.index.sandbox` as ``python -I _jail.py CONFIG_JSON`` (a standalone file so
it starts without importing the package). Single-threaded, so ``fork`` here is safe.

Steps: unshare PID + mount (+ network) namespaces (plus a user namespace when not root);
make mounts private; hide the invoking user's home and ``/tmp``-like directories under
fresh tmpfs mounts (re-binding the Python installation and the work directory); fork the
namespace's init, which mounts a private ``/proc``, applies rlimits, drops to the slot's
uid (root only) and execs Python. When the init exits, the kernel kills every other
process in the namespace, so fork bombs and daemons die with it. The outcome (exit code,
signal, which isolation steps held) is written as JSON to the status fd.
"""

import ctypes
import json
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18

libc = ctypes.CDLL(None, use_errno=True)


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    status_fd = cfg["status_fd"]
    iso = {"pid_ns": False, "mount_ns": False, "net_ns": False, "uid": cfg["run_uid"] if os.geteuid() == 0 else os.geteuid(), "tmpfs": []}
    root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWNET if cfg["no_network"] else 0)
    if not root:
        flags |= CLONE_NEWUSER
    if libc.unshare(flags) == 0:
        iso["pid_ns"] = iso["mount_ns"] = True
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
    if ns_ok:
        try:
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            # Keep handles on what must stay visible before tmpfs mounts hide it.
            keep = {p: os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in cfg["rebind"] if os.path.isdir(p)}
            work_fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
            for d in cfg["hide"]:
                if os.path.isdir(d):
                    try:
                        _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cfg['tmpfs_size']},mode=1777")
                        iso["tmpfs"].append(d)
                    except OSError:
                        pass
            for p, fd in keep.items():
                if any(p == h or p.startswith(h.rstrip("/") + "/") for h in iso["tmpfs"]):
                    os.makedirs(p, exist_ok=True)
                    _mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
            inside = "/tmp/work" if "/tmp" in iso["tmpfs"] else work
            if inside != work:
                os.makedirs(inside, exist_ok=True)
                _mount(f"/proc/self/fd/{work_fd}", inside, None, MS_BIND)
            work = inside
        except OSError as exc:
            iso["mount_error"] = str(exc)
    limits = cfg["limits"]
    # Isolation first, on its own line, so a run killed at the wall clock still reports it.
    os.write(status_fd, (json.dumps({"isolation": iso}) + "\n").encode())
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
            if root and cfg["run_uid"] is not None:
                os.setgroups([])
                os.setgid(cfg["run_uid"])
                os.setuid(cfg["run_uid"])
            os.chdir(work)
            os.close(status_fd)
            env = dict(cfg["env"], HOME=work, TMPDIR=work)
            os.execve(cfg["python"], [cfg["python"], "-I", "-B", cfg["main"]], env)
        except BaseException as exc:  # setup failed: say so on stderr, distinct exit code
            os.write(2, f"sandbox setup failed: {exc!r}\n".encode())
            os._exit(120)
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    # Under load the kernel may deliver the hard limit's SIGKILL rather than SIGXCPU; the CPU
    # time used tells the two apart from a kill for another reason.
    out = {"cpu_seconds": cpu, "cpu_exceeded": cpu >= limits["cpu_seconds"]}
    if os.WIFSIGNALED(status):
        out["signal"] = os.WTERMSIG(status)
        out["exit"] = None
    else:
        out["exit"] = os.WEXITSTATUS(status)
        out["signal"] = None
    os.write(status_fd, json.dumps(out).encode())
    os.close(status_fd)
    os._exit(0)


if __name__ == "__main__":
    main()
