"""RQ's top layer: the wiring list, job entry points, the worker, runner and cron commands."""
