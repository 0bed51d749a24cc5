"""Headless Chromium for the report tests (Playwright driving the system's `chromium`)."""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import Iterator

import pytest


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """The browser's path; in CI (CI=true) a missing browser fails the test, locally it skips."""
    path = chromium_path()
    try:
        import playwright  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        msg = "chromium or playwright is missing (set-up installs them: see the README)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@contextlib.contextmanager
def browser() -> Iterator:
    from playwright.sync_api import sync_playwright

    path = require_chromium()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox", "--allow-file-access-from-files"])
        try:
            yield b
        finally:
            b.close()


class Page:
    """A page that records console errors, page errors and any request leaving file://."""

    def __init__(self, b, viewport=(1400, 900)):
        self.page = b.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, url: str):
        self.page.goto(url)
        self.page.wait_for_selector("nav a")
        return self.page
