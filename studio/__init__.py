"""Studio app builder (spec document 1)."""
