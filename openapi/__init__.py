"""Open API v1 (spec document 3)."""
