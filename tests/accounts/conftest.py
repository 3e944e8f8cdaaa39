import pytest

from tests.accounts.factories import fast_password_hashing


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    fast_password_hashing(settings)
