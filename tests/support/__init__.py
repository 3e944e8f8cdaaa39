"""Helpers shared by the test layers: waiting, free ports, real servers in subprocesses."""

from scripts.proc import free_port, wait_until

__all__ = ["free_port", "wait_until"]
