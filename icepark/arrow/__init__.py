"""arrow layer."""
