"""Shared real-time parts under every app: Redis clients, the guarded JSON socket, rate
limits and socket presence. Framework-level plumbing only: no rules, no match, no lobby."""
