"""Lobby models (none yet)."""
