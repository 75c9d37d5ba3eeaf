"""Scan planning: snapshot -> manifests -> entries -> file scan tasks."""
