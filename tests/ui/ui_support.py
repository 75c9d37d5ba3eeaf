"""What the web page's tests share besides fixtures: the tables' names and a live server
(:func:`services.serving`, the REST tests' too)."""

from __future__ import annotations

from services import serving

__all__ = ["BIG_FILES", "BIG_TABLE", "DEMO_TABLE", "LOCAL", "serving"]

BIG_TABLE = "bench.many"
BIG_FILES = 10_000
DEMO_TABLE = "demo.events"
LOCAL = "http://127.0.0.1"
"""The test clients' base URL: the page answers loopback ``Host`` names only."""
