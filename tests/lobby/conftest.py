import pytest

from realtime.redis_clients import sync_redis
from tests.accounts.factories import fast_password_hashing


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    fast_password_hashing(settings)


@pytest.fixture(autouse=True)
def no_lobby_sockets():
    """Lobby presence lives in Redis across runs, keyed by user ids a new database reuses."""
    client = sync_redis()
    for key in client.scan_iter("sbo:lobby:sockets:*"):
        client.delete(key)
