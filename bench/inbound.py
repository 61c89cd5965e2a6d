"""Signed inbound channel messages per second through the WSGI stack, against the durable-write
floor of the same database: one INSERT and its COMMIT (the rate at which a single row can be
made durable, so machine and disk speed cancel out).

Run: .venv/bin/python -m bench.inbound
Target (issue 11): inbound messages >= 0.2 x the floor rate on PostgreSQL; proposed instead:
>= 0.12 (docs/benchmarks.md). SQLite's commit in WAL mode with synchronous=NORMAL skips the fsync,
so its floor is no durable write and it has no target; its ratio is printed for comparison only.
Beside the ratio: a request that makes only the store round trips a message needs (read the
channel, write three rows, commit, one Redis command), the least any implementation costs here.
"""
import itertools
import json
import logging
import time

from sqlalchemy import literal, select

from bench.common import SCRATCH, add_stores_route, bench_app, durable_write, rates, target
from core.crypto import hmac_sha256_hex
from core.db import db
from core.redis import get_redis
from desk.channels import create_channel
from desk.tenancy import create_tenant

TARGET = 0.2
PROPOSED_TARGET = 0.12  # on PostgreSQL: the floor this design keeps is measured in docs/benchmarks.md
CUSTOMERS = 50  # messages rotate over existing customers, each with an open conversation
STORES_ONLY = "/bench/inbound-stores-only"


def main() -> None:
    """Measure the floor, the inbound rate and the stores alone in one run; print the ratios."""
    logging.disable(logging.INFO)
    app = bench_app()
    add_stores_route(app, STORES_ONLY, _inbound_round_trips)
    with app.app_context():
        tenant = create_tenant("Bench")
        channel, secret = create_channel(tenant.id, "Bench chat")
        db.session.commit()
        url = f"/api/channels/{channel.id}/messages"
        dialect = db.engine.dialect.name
    client = app.test_client()
    counter = itertools.count()

    def inbound():
        n = next(counter)
        raw = json.dumps({"message_id": f"m-{n}", "text": "Where is my parcel?",
                          "customer": {"external_id": f"c-{n % CUSTOMERS}", "name": "Bench Customer"}}).encode()
        ts = str(int(time.time()))
        response = client.post(url, data=raw, content_type="application/json", headers={
            "X-Channel-Timestamp": ts,
            "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, ts.encode() + b"." + raw)})
        assert response.status_code == 201, response.get_data(as_text=True)

    for _ in range(CUSTOMERS):
        inbound()  # every customer and conversation exists before the timed rounds
    with durable_write(app) as write:  # timed in alternating rounds: the disk's speed drifts
        measured = rates({"floor": write, "inbound": inbound, "stores only": lambda: client.get(STORES_ONLY)},
                         seconds=9.0, rounds=6)
    floor, messages, stores_only = measured.values()
    ratio, postgresql = messages / floor, dialect == "postgresql"
    print(f"one INSERT + COMMIT (the floor)              {1000 / floor:7.3f} ms {floor:9.1f}/s (baseline)")
    print(f"POST signed inbound message                  {1000 / messages:7.3f} ms {messages:9.1f}/s   "
          f"ratio {ratio:.3f} " + (target(ratio, at_least=TARGET) if postgresql else "(no target on SQLite)"))
    if postgresql:
        print(f"  proposed: {target(ratio, at_least=PROPOSED_TARGET)}; "
              f"time per message the {TARGET} target allows {1000 / (TARGET * floor):.3f} ms")
    print(f"a request making only its store round trips {1000 / stores_only:7.3f} ms {stores_only:9.1f}/s   "
          f"ratio {stores_only / floor:.3f} (the stores' floor)")
    print(f"  the message / that request                                          ratio {messages / stores_only:.3f}")


def _inbound_round_trips() -> None:
    """What an inbound message asks of the stores, without its logic: a read, three row writes
    (customer, conversation, message), the commit, and one Redis command for the event."""
    db.session.execute(select(literal(1))).scalar()
    for _ in range(3):
        db.session.execute(SCRATCH.insert())
    db.session.commit()
    get_redis().set("bench:event", "queued")


if __name__ == "__main__":
    main()
