"""Automation rules (spec document 2)."""
