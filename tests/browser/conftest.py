"""Browser tests: Playwright on the machine's Chromium (CHROMIUM_PATH, set by make test).

- `servers`: a real Daphne and a real Celery worker on the test database (use with
  `transactional_db`, which the fixture requests, so the servers see the test's rows).
- `new_page(**context_options)`: a page in a fresh browser context (one per player); the test
  fails if a script on any of them threw.
- `Driver` (tests/browser/driver.py) plays a seat by clicking in its page.
"""

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


# A page must load and contribute before the server stands in for it: on a loaded machine 5 s
# is short for that, and a stand-in is not what most of these tests are about.
DEAL_WAIT_MS = 15_000


@pytest.fixture(scope="session")
def server_env(server_env):
    return {**server_env, "DEAL_CONTRIBUTION_MS": str(DEAL_WAIT_MS)}  # rounds dealt in Daphne


@pytest.fixture(autouse=True)
def roomy_deal_wait(settings):
    settings.DEAL_CONTRIBUTION_MS = DEAL_WAIT_MS  # rounds dealt here (a match's first)


@pytest.fixture
def servers(daphne_server, celery_worker_process, transactional_db):
    return daphne_server


@pytest.fixture
def new_page(browser):
    """Pages in fresh contexts; a test fails if any of its pages' scripts threw."""
    contexts = []
    script_errors = []

    def make(**options):
        context = browser.new_context(**{"viewport": {"width": 1280, "height": 860}, **options})
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: script_errors.append(f"{page.url}: {error}"))
        return page

    yield make
    for context in contexts:
        context.close()
    assert script_errors == []
