"""Project-wide Celery tasks."""

import time

from celery import shared_task
from django.conf import settings

from config.health import record_heartbeat, redis_client


@shared_task(name="config.tasks.heartbeat", ignore_result=False)
def heartbeat() -> float:
    """Beat's periodic proof that a worker is consuming tasks; returns the recorded time."""
    now_s = time.time()
    client = redis_client()
    try:
        record_heartbeat(client, now_s=now_s, interval_s=float(settings.HEARTBEAT_INTERVAL_S))
    finally:
        client.close()
    return now_s
