"""Queue names and which process serves which: shared by the app and the app-free processes (the
clock, the script runner), so importing them loads neither Flask nor the database."""
DEFAULT = "default"
EVENTS = "events"
WEBHOOKS = "webhooks"
SCRIPTS = "scripts"
GENERATION = "generation"  # model calls: a process of its own, so a slow model never holds up events
WORKER_QUEUES = (EVENTS, WEBHOOKS, DEFAULT)
GENERATOR_QUEUES = (GENERATION,)
RUNNER_QUEUES = (SCRIPTS,)
ALL_QUEUES = (*WORKER_QUEUES, *GENERATOR_QUEUES, *RUNNER_QUEUES)
