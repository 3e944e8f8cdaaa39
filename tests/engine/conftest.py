"""The engine's tests are pure: no database, no static files, no servers.

The root conftest collects static files once per session for the page tests; the rules need
none, so that fixture is a no-op here and ``pytest tests/engine -p no:django`` runs without
Django settings.
"""

import pytest


@pytest.fixture(scope="session", autouse=True)
def collected_static():
    """Overrides the root fixture: the rules package renders no pages."""
    return None
