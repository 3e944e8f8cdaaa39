"""The Celery app: Redis broker and results, configuration from Django settings (CELERY_*).

The worker runs `BrokerRestartSafeConsumer` (below): Celery 5.7.0's consumer dies on a broker
restart while it holds an unacknowledged message (docs/deploy.md, "Broker restarts").
"""

import logging
import os

from celery import Celery, signals
from celery.worker.consumer import Consumer

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)


class BrokerRestartSafeConsumer(Consumer):
    """Celery's worker consumer, minus a crash when the broker connection is lost.

    On a lost connection Celery 5.7.0 first `collect()`s the connection, which detaches kombu's
    transport (its `client` becomes None) but leaves the default channel open when closing it
    failed on the dead socket, and then also `close()`s it. That second close closes the channel,
    whose QoS restores the unacknowledged messages through a new Redis pool built from the
    detached transport: `AttributeError: 'NoneType' object has no attribute 'hostname'`, not a
    connection error, so it escapes and the worker exits ("Unrecoverable error"). The worker
    always holds such a message while a match is live: its deadline task waits unacknowledged
    for its ETA. Celery 5.6 only collected the connection.

    Here that last close may fail so: the channel has disconnected its Redis pools by then (the
    sockets are released), and the messages it could not restore stay in Redis's unacked set,
    which puts them back on the queue after the visibility timeout, as in Celery 5.6. Remove
    this class (and `worker_consumer` below) once Celery's close after collect survives it:
    tests/faults/test_worker_broker.py fails without it.
    """

    def on_connection_error_after_connected(self, exc):
        if self.connection is not None:
            _close_tolerating_a_detached_transport(self.connection)
        super().on_connection_error_after_connected(exc)


def _close_tolerating_a_detached_transport(connection) -> None:
    close = connection.close

    def close_lost_connection():
        try:
            close()
        except AttributeError as error:  # the transport was detached by collect()
            logger.warning(
                "Closing the lost broker connection: %r; its unacknowledged messages return "
                "to the queue after the visibility timeout",
                error,
            )

    connection.close = connection.release = close_lost_connection


app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.worker_consumer = "config.celery:BrokerRestartSafeConsumer"
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_database_connections(**_kwargs) -> None:
    """A task's database connections are looked after as a request's are (the worker keeps
    them, CELERY_DB_REUSE_MAX): CONN_MAX_AGE, a health check before reuse, a connection that
    raised replaced."""
    from django.db import close_old_connections

    close_old_connections()
