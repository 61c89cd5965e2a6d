"""instance/ (database, keys, embedded Redis) is readable by its owner only, whatever the umask."""
import os
import stat

import pytest
import redis
from sqlalchemy import create_engine, text

from core import config
from core.embedded_redis import start_embedded, stop_embedded


def mode(path) -> int:
    """The permission bits of a path."""
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def instance(tmp_path, monkeypatch):
    """A fresh instance/ under a permissive umask, as on a default Debian login."""
    path = tmp_path / "instance"
    monkeypatch.setattr(config, "INSTANCE_PATH", path)
    previous = os.umask(0o022)
    yield path
    os.umask(previous)


def test_generated_keys_and_the_default_database_are_private(instance):
    cfg = config.load_config(environ={})
    assert mode(instance) == 0o700
    assert mode(instance / "secret_key") == 0o600 and mode(instance / "encryption_key") == 0o600
    engine = create_engine(cfg["SQLALCHEMY_DATABASE_URI"])
    with engine.begin() as conn:
        conn.execute(text("PRAGMA journal_mode=WAL"))
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
        assert mode(instance / "studio.db-wal") == 0o600
    engine.dispose()
    assert mode(instance / "studio.db") == 0o600


def test_an_existing_instance_directory_and_database_are_tightened(instance):
    instance.mkdir(mode=0o755)
    (instance / "studio.db").touch(mode=0o644)
    config.load_config(environ={})
    assert mode(instance) == 0o700 and mode(instance / "studio.db") == 0o600


def test_the_keys_are_generated_once(instance):
    first = config.load_config(environ={})
    again = config.load_config(environ={})
    assert (first["SECRET_KEY"], first["ENCRYPTION_KEY"]) == (again["SECRET_KEY"], again["ENCRYPTION_KEY"])


def test_an_overridden_database_leaves_no_default_file(instance):
    config.load_config({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "s", "ENCRYPTION_KEY": "k"},
                       environ={})
    assert not (instance / "studio.db").exists()


def test_the_embedded_redis_files_and_socket_are_private(instance):
    url = start_embedded(instance / "redis.db")
    try:
        conn = redis.Redis.from_url(url)
        conn.set("k", "v")
        conn.save()
        socket_path = url.removeprefix("unix://")
        assert mode(instance) == 0o700
        assert mode(instance / "redis.db") == 0o600
        assert mode(instance / "redis.db.settings") == 0o600
        assert mode(socket_path) & 0o077 == 0 and mode(os.path.dirname(socket_path)) & 0o077 == 0
    finally:
        stop_embedded(instance / "redis.db")  # only this one: the suite's own server keeps running
