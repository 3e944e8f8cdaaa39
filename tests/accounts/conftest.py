import pytest

from config.redis_clients import sync_redis
from tests.accounts.factories import fast_password_hashing


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    fast_password_hashing(settings)


@pytest.fixture(autouse=True)
def no_login_failures():
    """Login-failure counters live in Redis across runs; each test starts with none."""
    client = sync_redis()
    for key in client.scan_iter("sbo:cache:*login-fail:*"):
        client.delete(key)
