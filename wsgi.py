"""WSGI entry point for gunicorn: `gunicorn wsgi:app`; it refuses a Redis that may evict keys."""
from app import create_app
from core.redis import get_redis
from core.redis_policy import refuse_evicting_redis

app = create_app()
with app.app_context():
    refuse_evicting_redis(get_redis(), "the web process")
