"""A web process: Daphne on uvloop (``python -m config.serve`` with Daphne's arguments).

Daphne runs Twisted on the asyncio loop that ``asyncio.new_event_loop`` gives when its server
module is first imported; with uvloop's policy set before that, the loop is uvloop's (as Scrapy
runs Twisted on it), which does the loop's own work and the Redis connections' I/O in C."""

import asyncio

import uvloop

asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())

from daphne.cli import CommandLineInterface  # noqa: E402  (after the policy: it makes the loop)

if __name__ == "__main__":
    CommandLineInterface.entrypoint()
