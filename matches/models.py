"""Match models (none yet)."""
