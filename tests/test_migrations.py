"""Migrations: one head, and `upgrade` from empty builds exactly the tables the models declare."""
import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask_migrate import upgrade
from sqlalchemy import create_engine, inspect

from app import init_migrations
from core.config import PROJECT_ROOT
from core.db import db
from tests.conftest import build_app


def _differences(engine) -> list:
    with engine.connect() as connection:
        return compare_metadata(MigrationContext.configure(connection, opts={"compare_type": True}),
                                db.metadata)


def test_migrations_have_a_single_head():
    script = ScriptDirectory(str(PROJECT_ROOT / "migrations"))
    assert len(script.get_heads()) == 1


def test_upgraded_test_database_matches_the_models(app):
    """The session database (PostgreSQL in CI) was built by `upgrade` from empty."""
    assert _differences(db.engine) == []
    assert set(inspect(db.engine).get_table_names()) == set(db.metadata.tables) | {"alembic_version"}


def test_upgrade_from_empty_on_sqlite_matches_the_models(app_config, tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    fresh = build_app({**app_config, "SQLALCHEMY_DATABASE_URI": url})
    init_migrations(fresh)
    with fresh.app_context():
        upgrade()
    engine = create_engine(url)
    assert _differences(engine) == []
    assert set(inspect(engine).get_table_names()) == set(db.metadata.tables) | {"alembic_version"}


def test_models_and_migrations_agree_per_flask_db_check(app_config, tmp_path):
    url = f"sqlite:///{tmp_path / 'check.db'}"
    env = {"DATABASE_URL": url, "REDIS_URL": app_config["REDIS_URL"], "SECRET_KEY": "x",
           "ENCRYPTION_KEY": app_config["ENCRYPTION_KEY"], "PATH": "/usr/bin:/bin"}
    flask = [sys.executable, "-m", "flask", "--app", "app", "db"]
    subprocess.run([*flask, "upgrade"], env=env, cwd=PROJECT_ROOT, check=True, capture_output=True)
    check = subprocess.run([*flask, "check"], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_flask_prepare_upgrades_and_seeds_an_empty_database_once(app, app_config, tmp_path):
    """What `make run` runs before starting the processes (in a process of its own)."""
    url = f"sqlite:///{tmp_path / 'prepare.db'}"
    env = {"DATABASE_URL": url, "REDIS_URL": app_config["REDIS_URL"], "SECRET_KEY": "x",
           "ENCRYPTION_KEY": app_config["ENCRYPTION_KEY"], "PATH": "/usr/bin:/bin"}
    prepare = [sys.executable, "-m", "flask", "--app", "app", "prepare"]
    first = subprocess.run(prepare, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert "admin@acme.example" in first.stdout and "demo-pass-2026" in first.stdout
    engine = create_engine(url)
    assert _differences(engine) == []
    again = subprocess.run(prepare, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert "already has tenants" in again.stdout and "admin@acme.example" not in again.stdout
