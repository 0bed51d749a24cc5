"""Start and talk to the fake OpenAI-compatible server in its own process."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent


class FakeServer:
    def __init__(self, config: dict | None = None, tmp_dir: Path | None = None):
        self.config = config or {}
        cfg_path = Path(tmp_dir or HERE) / f"fake_server_{id(self)}.json"
        cfg_path.write_text(json.dumps(self.config))
        self._cfg_path = cfg_path
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "fake_llm_server.py"), "--port", "0", "--config", str(cfg_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            self.proc.kill()
            raise RuntimeError(f"fake server failed to start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _get(self, path: str, data: dict | None = None) -> dict:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=None if data is None else json.dumps(data).encode(),
            method="GET" if data is None else "POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def stats(self) -> dict:
        return self._get("/stats")

    def reset(self) -> None:
        self._get("/reset", {})

    def configure(self, config: dict) -> None:
        self.config = config
        self._get("/control", config)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._cfg_path.unlink(missing_ok=True)

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
