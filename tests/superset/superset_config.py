# Superset 6.1.0 for the guard's real-Superset test: async queries on (unless GUARD_GAQ=0), polling transport,
# sqlite metadata, Redis on the port the test picked, everything on 127.0.0.1; Talisman on, with
# its default policy plus 'wasm-unsafe-eval', as an operator sets it (README,
# "Content-Security-Policy").
import os
from pathlib import Path

from flask import Blueprint, render_template_string
from superset.config import TALISMAN_CONFIG

_redis_port = int(os.environ["GUARD_REDIS_PORT"])
_home = os.environ["SUPERSET_HOME"]
_redis = f"redis://127.0.0.1:{_redis_port}"

SECRET_KEY = "guard-test-secret-key-not-for-production-0123456789"
SQLALCHEMY_DATABASE_URI = f"sqlite:///{_home}/superset.db"
PREVENT_UNSAFE_DB_CONNECTIONS = False
WTF_CSRF_ENABLED = True

# Talisman as 6.1.0 ships it (TALISMAN_ENABLED defaults to True; the default TALISMAN_CONFIG
# already has force_https and session_cookie_secure False, so plain http on 127.0.0.1 works);
# only script-src gains 'wasm-unsafe-eval'. Not debug mode (the test sets FLASK_DEBUG=0), which
# would use TALISMAN_DEV_CONFIG instead.
TALISMAN_ENABLED = True
TALISMAN_CONFIG["content_security_policy"]["script-src"] = ["'self'", "'strict-dynamic'", "'wasm-unsafe-eval'"]

# The test page, served by Superset itself, so under the very header Talisman sends, the
# request's nonce on its script tags the way Superset's own templates put it there
# (`nonce="{{ macros.get_nonce() }}"`, i.e. Talisman's csp_nonce()). Its scripts and the package
# are served beside it by the test's proxy under /guard/.
_guard_page = Blueprint("guard_test_page", __name__)


@_guard_page.route("/guard/index.html")
def _guard_index():
    return render_template_string((Path(__file__).parent / "page.html").read_text())


BLUEPRINTS = [_guard_page]

# GUARD_GAQ=0: GLOBAL_ASYNC_QUERIES off, Superset's default: chart data answers synchronously.
FEATURE_FLAGS = {"GLOBAL_ASYNC_QUERIES": os.environ.get("GUARD_GAQ", "1") == "1"}
GLOBAL_ASYNC_QUERIES_TRANSPORT = "polling"
GLOBAL_ASYNC_QUERIES_JWT_SECRET = "guard-test-jwt-secret-0123456789abcdef0123456789"
GLOBAL_ASYNC_QUERIES_JWT_COOKIE_SECURE = False
GLOBAL_ASYNC_QUERIES_CACHE_BACKEND = {
    "CACHE_TYPE": "RedisCache",
    "CACHE_REDIS_HOST": "127.0.0.1",
    "CACHE_REDIS_PORT": _redis_port,
    "CACHE_REDIS_DB": 0,
}

_cache = lambda prefix, db: {  # noqa: E731
    "CACHE_TYPE": "RedisCache",
    "CACHE_DEFAULT_TIMEOUT": 300,
    "CACHE_KEY_PREFIX": prefix,
    "CACHE_REDIS_URL": f"{_redis}/{db}",
}
CACHE_CONFIG = _cache("superset_", 1)
DATA_CACHE_CONFIG = _cache("superset_data_", 2)

from flask_caching.backends.rediscache import RedisCache  # noqa: E402

RESULTS_BACKEND = RedisCache(host="127.0.0.1", port=_redis_port, db=3, key_prefix="results_")


class CeleryConfig:
    broker_url = f"{_redis}/4"
    result_backend = f"{_redis}/4"
    imports = ("superset.sql_lab", "superset.tasks.async_queries")
    worker_prefetch_multiplier = 1
    task_acks_late = False


CELERY_CONFIG = CeleryConfig
