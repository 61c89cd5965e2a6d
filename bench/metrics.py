"""Prometheus metrics: what counting every request costs an authenticated read.

Run: .venv/bin/python -m bench.metrics
Target (issue 25): the console's authenticated read (GET /api/extensions/, a session and a query)
with metrics on >= 0.95 x the same read with metrics off, timed in alternating rounds of one run.
The counters are written as `make run` writes them: into a multiprocess directory's files.
"""
import os
import tempfile

os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="bench-metrics-"))

from bench.common import bench_app, logged_in, rates, target  # noqa: E402 (the directory must come first)
from core.db import db  # noqa: E402
from desk.tenancy import add_member, create_tenant  # noqa: E402

EMAIL, PASSWORD = "admin@bench.example", "bench-password-1"


def main() -> None:
    app = bench_app()
    with app.app_context():
        tenant = create_tenant("Bench metrics", "professional")
        add_member(tenant.id, EMAIL, PASSWORD, "admin")
        db.session.commit()
    client = logged_in(app, EMAIL, PASSWORD)

    def read():
        assert client.get("/api/extensions/").status_code == 200

    def metrics_on():
        app.config["METRICS_ENABLED"] = True
        read()

    def metrics_off():
        app.config["METRICS_ENABLED"] = False
        read()

    measured = rates({"on": metrics_on, "off": metrics_off})
    ratio = measured["on"] / measured["off"]
    print(f"database: {app.config['SQLALCHEMY_DATABASE_URI'].split(':', 1)[0]}; counters in "
          f"{os.environ['PROMETHEUS_MULTIPROC_DIR']}")
    print(f"GET /api/extensions/, metrics off    {measured['off']:8.1f} req/s (baseline)")
    print(f"GET /api/extensions/, metrics on     {measured['on']:8.1f} req/s  {ratio:.3f} x "
          f"{target(ratio, at_least=0.95)}")


if __name__ == "__main__":
    main()
