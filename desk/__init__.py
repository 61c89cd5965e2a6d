"""The host desk: tenants, members, customers, conversations, channels, knowledge, workbench."""
