"""Settings come from the environment and wire the real parts together."""

import os
import subprocess
import sys

import pytest
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from config.env import database_config, env_bool, env_list
from tests.support.servers import ROOT


def test_the_default_database_is_sqlite_in_wal_mode_with_immediate_transactions(tmp_path):
    config = database_config(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "PRAGMA journal_mode=WAL" in config["OPTIONS"]["init_command"]
    assert config["TEST"]["NAME"] == str(tmp_path / "test_db.sqlite3")


def test_a_postgres_url_gets_no_sqlite_options():
    config = database_config("postgres://postgres@127.0.0.1:5432/test")
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert config["NAME"] == "test"
    assert "OPTIONS" not in config or "transaction_mode" not in config["OPTIONS"]


def test_a_postgres_urls_own_connection_options_win_over_the_default_keepalives():
    config = database_config("postgres://db.internal/live?sslmode=require&keepalives_idle=60")
    assert config["OPTIONS"]["sslmode"] == "require"
    assert config["OPTIONS"]["keepalives_idle"] == 60
    assert config["OPTIONS"]["tcp_user_timeout"] == 10_000  # the rest stay


@pytest.mark.django_db
def test_sqlite_connections_really_use_wal():
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("DATABASE_URL points at another database")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"


def test_booleans_and_lists_are_parsed_from_the_environment(monkeypatch):
    monkeypatch.setenv("FLAG", "on")
    monkeypatch.setenv("HOSTS", "a.example, b.example,")
    assert env_bool("FLAG") is True
    assert env_bool("UNSET_FLAG_FOR_TEST", default=False) is False
    assert env_list("HOSTS", []) == ["a.example", "b.example"]
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured):
        env_bool("FLAG")


def test_the_channel_layer_is_channels_redis_pubsub_on_the_configured_redis():
    # PUBLISH by default: one Redis command a broadcast (docs/benchmarks.md compares the two).
    assert isinstance(get_channel_layer(), RedisPubSubChannelLayer)
    assert settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"] == (
        settings.REDIS_URL
    )


def test_celery_uses_redis_for_broker_and_results_and_schedules_the_heartbeat():
    from config.celery import app

    assert app.conf.broker_url == settings.REDIS_URL
    assert app.conf.result_backend == settings.REDIS_URL
    assert app.conf.beat_schedule["heartbeat"]["task"] == "config.tasks.heartbeat"
    app.loader.import_default_modules()  # as a worker does at start
    assert "config.tasks.heartbeat" in app.tasks


def test_the_user_model_is_the_custom_one():
    assert settings.AUTH_USER_MODEL == "accounts.User"
    assert get_user_model()._meta.label == "accounts.User"


def _import_settings(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_secret_key_is_required_when_debug_is_off():
    result = _import_settings()
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_debug_runs_without_a_secret_key():
    assert _import_settings(DEBUG="1").returncode == 0


def test_deploy_checks_pass_behind_https_with_hsts_options_set():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={
            **os.environ,
            "HTTPS": "1",
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
            "SECURE_HSTS_PRELOAD": "1",
            "SECRET_KEY": "x" * 60 + "-not-a-real-key-0123456789",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
