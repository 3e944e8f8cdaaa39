"""Django settings: one module, every knob from the environment (see README.md)."""

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import (
    PUBSUB_SHARDS,
    REDIS_SOCKET_TIMEOUT_S,
    database_config,
    env_bool,
    env_int,
    env_list,
    env_str,
    redis_channel_layers,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)

# `make run` / `make test` export a key generated once into .run/secret_key (git-ignored).
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Use `make run` / `make test` (they generate a local key), "
            "or export SECRET_KEY (required whenever DEBUG is off)."
        )
    SECRET_KEY = "django-insecure-debug-only-key-set-SECRET_KEY-to-keep-sessions"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / Redoc assets served locally (no CDN)
    "django_filters",
    "axes",  # sign-in protection (the AXES_* block at the end)
    "accounts",
    "lobby",
    "matches",
    "clients",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # answers a refused sign-in (last, as axes asks)
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
DATABASES = {
    "default": database_config(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE_S", 600))
}
# Threads per web process for the sockets' database calls (realtime/database.py): SQLite takes
# one writer at a time, PostgreSQL one per match row.
DB_THREADS = env_int("DB_THREADS", 1 if DATABASES["default"]["ENGINE"].endswith("sqlite3") else 4)
# PostgreSQL connections of each web process's event loop, for the moves it makes itself: one is
# held until the loop comes back to its move, so a busy loop needs more (at 1,000 matches, 4
# left ~30 moves a second to the threads).
LOOP_DB_CONNECTIONS = env_int("LOOP_DB_CONNECTIONS", 16)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
# axes refuses locked-out sign-ins before any password is checked, for every authenticate().
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Redis: channel layer, cache, Celery ----------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

CHANNEL_LAYERS = redis_channel_layers(
    REDIS_URL,
    env_str("CHANNEL_LAYER", "pubsub"),
    shards=env_int("CHANNEL_LAYER_SHARDS", PUBSUB_SHARDS),
)

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "sbo:cache",
        "OPTIONS": {
            "socket_timeout": REDIS_SOCKET_TIMEOUT_S,
            "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_S,
        },
    }
}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Retry a lost broker for ever (the default exits after 100 attempts, about 45 minutes).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Sending a task (a fault re-check from a web process) never hangs on a frozen Redis: socket
# timeouts above the worker's 1 s BRPOP, and a short retry.
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 5, "socket_connect_timeout": 2}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600  # seconds
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection after each task unless it may reuse
# them: a new PostgreSQL backend for each of beat's tasks, several a second. The worker keeps
# them instead (config/celery.py looks after them as Django does a request's).
CELERY_DB_REUSE_MAX = 2**62
CELERY_IMPORTS = ["config.tasks"]  # config is not an app, so autodiscovery would miss it
HEARTBEAT_INTERVAL_S = env_int("HEARTBEAT_INTERVAL_S", 10)
CELERY_BEAT_SCHEDULE = {
    "heartbeat": {
        "task": "config.tasks.heartbeat",
        "schedule": float(HEARTBEAT_INTERVAL_S),
        "options": {"expires": float(HEARTBEAT_INTERVAL_S)},
    },
    # Catches deadlines whose own task was lost (see matches/tasks.py).
    "sweep-deadlines": {
        "task": "matches.tasks.sweep_deadlines",
        "schedule": 1.0,
        "options": {"expires": 1.0},
    },
    # Finishes the match ends whose web process died between telling and concluding them.
    "conclude-pending-ends": {
        "task": "matches.tasks.conclude_pending_ends",
        "schedule": 2.0,
        "options": {"expires": 2.0},
    },
}
# A forfeit is concluded (record folded, ratings written) within milliseconds of being told;
# one that is not after this long was left by a process that died, and the sweeper does it.
END_CONCLUDED_WITHIN_MS = env_int("END_CONCLUDED_WITHIN_MS", 2_000)
# While a deadline keeper runs (manage.py keep_deadlines), the web processes leave each
# deadline to it for this long before they fire it themselves.
WEB_DEADLINE_GRACE_MS = env_int("WEB_DEADLINE_GRACE_MS", 50)

# --- Matches: the clock (RULES §7) and the service's timekeeping tolerances ----------------
MATCH_BANK_MS = env_int("MATCH_BANK_MS", 120_000)
MATCH_DELAY_MS = env_int("MATCH_DELAY_MS", 10_000)
START_GRACE_MS = env_int("START_GRACE_MS", 20_000)  # then the server presses Start / Continue
HOTSEAT_REVEAL_GRACE_MS = env_int("HOTSEAT_REVEAL_GRACE_MS", 300_000)
DEAL_CONTRIBUTION_MS = env_int("DEAL_CONTRIBUTION_MS", 5_000)  # then the server stands in
TIME_JUMP_TOLERANCE_MS = env_int("TIME_JUMP_TOLERANCE_MS", 1_000)
TIMEOUT_LATE_TOLERANCE_MS = env_int("TIMEOUT_LATE_TOLERANCE_MS", 3_000)
STAMP_LATE_TOLERANCE_MS = env_int("STAMP_LATE_TOLERANCE_MS", 2_000)
# A stretch without any web process up that a running clock may overlap before the service
# counts as having been unable to hear the player (matches/webbeats.py).
WEB_GAP_TOLERANCE_MS = env_int("WEB_GAP_TOLERANCE_MS", 3_000)
# One incident (one kind of fault in one match within this window) is one fault, however many
# commands saw it.
FAULT_INCIDENT_WINDOW_MS = env_int("FAULT_INCIDENT_WINDOW_MS", 60_000)

# --- WebSockets: what one connection, one address and one user may cost (docs/security.md) --
WS_RATE_BURST = env_int("WS_RATE_BURST", 30)
WS_RATE_PER_SECOND = env_int("WS_RATE_PER_SECOND", 10)
# Spectators and signed-out sockets may only ping and resync: a small budget.
WS_SPECTATOR_RATE_BURST = env_int("WS_SPECTATOR_RATE_BURST", 5)
WS_SPECTATOR_RATE_PER_SECOND = env_int("WS_SPECTATOR_RATE_PER_SECOND", 1)
WS_MAX_FRAME_BYTES = env_int("WS_MAX_FRAME_BYTES", 4_096)
WS_MAX_JSON_DEPTH = env_int("WS_MAX_JSON_DEPTH", 8)
WS_MAX_CONNECTIONS_PER_ADDRESS = env_int("WS_MAX_CONNECTIONS_PER_ADDRESS", 100)
WS_MAX_CONNECTIONS_PER_USER = env_int("WS_MAX_CONNECTIONS_PER_USER", 20)
# Extra origins (scheme://host[:port]) allowed to open sockets besides the page's own.
WS_TRUSTED_ORIGINS = env_list("WS_TRUSTED_ORIGINS", [])

# Our own Redis clients (time authority, presence, deadlines) per process: a busy pool makes a
# command wait up to the timeout, then answer `busy`.
REDIS_POOL_SIZE = env_int("REDIS_POOL_SIZE", 100)
REDIS_POOL_TIMEOUT_MS = env_int("REDIS_POOL_TIMEOUT_MS", 500)

# --- Internationalisation, static files -----------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("pl", "Polski")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticatedOrReadOnly",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": env_int("API_PAGE_SIZE", 50),
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_THROTTLE_ANON", "120/min"),
        "user": env_str("API_THROTTLE_USER", "600/min"),
        "export": env_str("API_THROTTLE_EXPORT", "20/min"),  # NDJSON exports (ScopedRateThrottle)
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Spectacular Bid online API",
    "DESCRIPTION": "Players, ratings and match archives of Spectacular Bid online.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Security (behind a TLS-terminating load balancer set HTTPS=1) ---------------------------
HTTPS = env_bool("HTTPS", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz(/monitor)?$"]  # load balancers probe over plain HTTP
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
X_FRAME_OPTIONS = "DENY"

# --- Logging: everything to stdout ----------------------------------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "plain",
        },
    },
    # A library that logs every retry through an outage: its first failure in full, then a
    # count a minute (config/logs.py).
    "filters": {"repeats_quieted": {"()": "config.logs.RepeatsQuieted"}},
    "root": {"handlers": ["stdout"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["stdout"], "level": LOG_LEVEL, "propagate": False},
        # (A logger's filters see only its own records, not its children's.)
        "channels_redis.pubsub": {"filters": ["repeats_quieted"]},
    },
}

# --- Accounts and the lobby -----------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "lobby"
LOGOUT_REDIRECT_URL = "home"
# "Play now": pair waiting players as their rating windows widen (lobby/pairing.py).
CELERY_BEAT_SCHEDULE["lobby-quick-pair"] = {
    "task": "lobby.tasks.quick_pair",
    "schedule": 1.0,
    "options": {"expires": 1.0},
}

# --- The computer player (matches/computer.py) ---------------------------------------------
# Its thinking budget per decision, per level (the expert's search; the others do not search).
COMPUTER_BUDGET_MS = {"expert": env_int("COMPUTER_EXPERT_BUDGET_MS", 1_000)}
# A short pause before each of its moves, so that a person sees what happens.
COMPUTER_PAUSE_MS = env_int("COMPUTER_PAUSE_MS", 600)
# A computer turn no worker took within this long is queued again (a lost task, a dead worker).
COMPUTER_OVERDUE_MS = env_int("COMPUTER_OVERDUE_MS", 10_000)
CELERY_BEAT_SCHEDULE["computer-overdue"] = {
    "task": "matches.tasks.computer_overdue",
    "schedule": 5.0,
    "options": {"expires": 5.0},
}

# The expert's budget per decision when it analyses a finished match (matches/analysis.py).
ANALYSIS_BUDGET_MS = env_int("ANALYSIS_BUDGET_MS", 50)

# --- Accounts: sign-in protection (django-axes; accounts/lockout.py) ------------------------
# Failed sign-ins (every authenticate(): the site's and the admin's) are counted in the database
# per account from one address and per address. Reaching either limit refuses sign-in from that
# address, to that account or to any, until the cool-off has passed since those failures,
# whatever the password; from another address the owner signs in as usual. Refused attempts add
# nothing, and a success resets nothing (an attacker's own account would wash the address).
SIGNIN_FAILURES_PER_ACCOUNT = env_int("SIGNIN_FAILURES_PER_ACCOUNT", 5)  # from one address
SIGNIN_FAILURES_PER_ADDRESS = env_int("SIGNIN_FAILURES_PER_ADDRESS", 20)
SIGNIN_COOLOFF_S = env_int("SIGNIN_COOLOFF_S", 600)
# Proxies in front of the web processes, each appending its peer to X-Forwarded-For: the client
# is the entry the outermost one added. 0: the header is ignored, REMOTE_ADDR is the client.
SIGNIN_TRUSTED_PROXIES = env_int("SIGNIN_TRUSTED_PROXIES", 0)
AXES_HANDLER = "accounts.lockout.SignInLockoutHandler"  # axes' database one, a limit per entry
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = SIGNIN_FAILURES_PER_ADDRESS  # axes' own check: the address's count
AXES_COOLOFF_TIME = SIGNIN_COOLOFF_S / 3600  # a float is hours (so would an int be)
AXES_CLIENT_IP_CALLABLE = "accounts.lockout.client_ip"
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"  # the sign-in page, status 429
AXES_RESET_ON_SUCCESS = False
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_DISABLE_ACCESS_LOG = True  # no table of every successful sign-in
