"""Match records, the live-match service, the clock, and the archive API."""
