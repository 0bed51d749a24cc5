"""The sandbox's non-root path: an unprivileged user namespace (mapped to root inside) carries
the PID, mount and network namespaces. As root, the test drops to uid/gid 65534 with
``setpriv`` and runs the sandbox there; as any other user it runs it directly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534

PROBE = r"""
import json, sys
from arena.index.sandbox import Sandbox, SandboxLimits
from arena.index.graders.code import grade_humaneval, grade_lcb
marker = sys.argv[1]
prog = '''
import os, socket
print(len([p for p in os.listdir("/proc") if p.isdigit()]))
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1)
    print("net")
except OSError:
    print("nonet")
open(%r, "w").write("escaped")
print(os.getuid())
open("/run/lock/arena-probe", "w").write("x")
try:
    open("/etc/arena-probe", "w")
except OSError as e:
    print(e.errno)
''' % marker
sbx = Sandbox(SandboxLimits(cpu_seconds=1, wall_seconds=10), workers=1)
ok = sbx.run(prog)
spin = sbx.run("while True:\n    pass\n")
lcb = grade_lcb(sbx, "print(int(input()) * 2)", [{"input": "3\n", "output": "6\n"}], testtype="stdin").status
he = grade_humaneval(sbx, "", "def f(x):\n    return x + 1\n", "def check(candidate):\n    assert candidate(1) == 2\n", "f").status
print(json.dumps({"euid": __import__("os").geteuid(), "ok": ok.to_dict(), "spin": spin.status, "graded": [lcb, he]}))
"""


def _as_nobody(cmd: list[str]) -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]


def _runner() -> tuple[list[str], dict[str, str] | None]:
    """The command prefix (and environment) that runs the probe as a non-root user, or skip
    saying why not."""
    if os.geteuid() != 0:
        return [sys.executable], None
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv (util-linux) is not installed: cannot drop to an unprivileged user")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": "/nonexistent"}
    probe = subprocess.run(_as_nobody(["unshare", "-U", "-r", "true"]), capture_output=True, env=env)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses unprivileged user namespaces: {probe.stderr.decode().strip()}")
    # The project's interpreter may sit under a root-only home (pyenv in /root); the sandbox
    # needs only the standard library, so any Python >= 3.11 the unprivileged user can run will do.
    for py in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        # The sandbox starts its jail with sys.executable, so that user must be able to run it too.
        check = "import subprocess, sys, arena.index.sandbox; assert sys.version_info >= (3, 11); subprocess.run([sys.executable, '-c', ''], check=True)"
        if py and subprocess.run(_as_nobody([py, "-c", check]), capture_output=True, env=env, cwd="/").returncode == 0:
            return _as_nobody([py]), env
    pytest.skip(f"no Python >= 3.11 that uid {NOBODY} may run and that can read {ROOT}")


def test_user_namespace_path_contains_the_program():
    cmd, env = _runner()
    marker = f"/tmp/arena-sbx-escape-{uuid.uuid4().hex}"
    res = subprocess.run([*cmd, "-c", PROBE, marker], capture_output=True, text=True, cwd="/", env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["euid"] != 0
    ok = out["ok"]
    iso = ok["isolation"]
    assert ok["status"] == "ok", ok["stderr"]
    assert iso["pid_ns"] and iso["mount_ns"] and iso["net_ns"], iso
    assert iso["uid"] == out["euid"]  # ran as the unprivileged user, not as root
    pids, net, uid_inside, erofs = ok["stdout"].split()
    assert erofs == "30"  # everything but the tmpfs mounts is read-only
    assert iso["ipc_ns"] and iso["read_only"] and "/run" in iso["tmpfs"] and iso["work_tmpfs"]
    assert out["graded"] == ["passed", "passed"]  # solution + harness processes on this path too
    assert not Path("/run/lock/arena-probe").exists()
    assert int(pids) <= 2  # a private /proc: only the sandbox's own processes
    assert net == "nonet"
    assert uid_inside == "0"  # mapped to root inside its user namespace only
    assert "/tmp" in iso["tmpfs"] and not Path(marker).exists()  # the write to /tmp vanished with the run
    assert out["spin"] in ("cpu_limit", "timeout")
