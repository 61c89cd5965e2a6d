"""The fault suite's own PostgreSQL cluster and redis-server (tests/faults/stores.py), made once per
session and dropped at its end, and an app on them for the test process's own setup and checks."""
import os

import pytest
from flask_migrate import upgrade

from app import init_migrations
from core.db import db, statement_timeout
from tests.conftest import build_app
from tests.faults.stores import ENCRYPTION_KEY, SECRET_KEY, Postgres, RedisServer


@pytest.fixture(scope="session")
def fault_stores(tmp_path_factory):
    """(Postgres, RedisServer), both empty but for the schema the migrations build."""
    if os.geteuid() != 0:  # never skipped: said at once instead of a failing pg_createcluster
        pytest.fail("tests/faults makes its own PostgreSQL cluster with pg_createcluster, which needs root: "
                    "run make test as root, as CI does")
    postgres = Postgres().create()
    server = RedisServer(tmp_path_factory.mktemp("fault-redis")).start()
    try:
        yield postgres, server
    finally:
        server.stop()
        postgres.drop()


@pytest.fixture(scope="session")
def fault_config(fault_stores) -> dict:
    postgres, server = fault_stores
    return {"TESTING": True, "SQLALCHEMY_DATABASE_URI": postgres.url, "REDIS_URL": server.url,
            "SECRET_KEY": SECRET_KEY, "ENCRYPTION_KEY": ENCRYPTION_KEY, "PASSWORD_HASH_METHOD": "pbkdf2:sha256:1000",
            "MODEL_BASE_URL": None, "MODEL_NAME": None, "MODEL_API_KEY": None}


@pytest.fixture(scope="session")
def fault_app(fault_config):
    """An app on the fault suite's stores, the schema built by the migrations."""
    application = build_app(fault_config)
    init_migrations(application)
    with application.app_context(), statement_timeout(0):
        upgrade()
    return application


@pytest.fixture
def faults_context(fault_app, fault_stores):
    """The fault app's context for one test; the stores are emptied after it."""
    postgres, server = fault_stores
    with fault_app.app_context():
        yield fault_app
        db.session.remove()
    postgres.read_only(False)
    tables = ", ".join(f'"{table.name}"' for table in db.metadata.sorted_tables)
    postgres.sql(f"TRUNCATE {tables} CASCADE")
    server.client().flushdb()
