"""RQ plumbing: queue names, enqueue(), the worker, runner and cron entry points."""
