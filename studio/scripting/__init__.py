"""Restricted scripts, named for where each part runs: `client` in web processes (rate limit,
hand-over, wait, revalidation), `runner` in the `python -m jobs.runner` process (feeds the sandbox),
`sandbox` in its own locked-down process (evaluates, imports nothing of the project)."""
