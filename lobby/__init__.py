"""Seeks, challenges, quick pairing, and the live lobby."""
