"""Browser tests: Playwright on the machine's Chromium (CHROMIUM_PATH, set by make test)."""

import os

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }
