"""Settings of the OpenID Connect test server: django-oauth-toolkit with OIDC, PKCE, refresh token rotation,
revocation and the device flow, on loopback, with its state (SQLite database, RSA signing key) in OIDC_STATE_DIR."""

import os
from pathlib import Path

STATE_DIR = Path(os.environ["OIDC_STATE_DIR"])
PORT = int(os.environ.get("OIDC_SERVER_PORT", "0"))
BASE_URL = f"http://127.0.0.1:{PORT}"

SECRET_KEY = (STATE_DIR / "django-secret").read_text() if (STATE_DIR / "django-secret").exists() else "setup-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "testserver.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
    "testserver",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
# Tests log in concurrently, and revoke tokens from a second process: writers wait for each other (IMMEDIATE
# transactions take the write lock up front, so a busy database is waited for instead of failing at once).
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(STATE_DIR / "db.sqlite3"),
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
# Fast hashing: the test users' passwords are not worth protecting, and logins in tests must be quick.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/accounts/login/"
STATIC_URL = "/static/"

# Seconds an access token lives, per client: the short-lived client exercises refresh and rotation in seconds.
SHORT_LIVED_CLIENTS = {"usher-short": 4}


def access_token_lifetime(request):
    client_id = getattr(getattr(request, "client", None), "client_id", None) or getattr(request, "client_id", None)
    return SHORT_LIVED_CLIENTS.get(client_id, 3600)


_key_path = STATE_DIR / "oidc-rsa.pem"
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": _key_path.read_text() if _key_path.exists() else "",
    "OAUTH2_VALIDATOR_CLASS": "testserver.validators.Validator",
    "PKCE_REQUIRED": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "ACCESS_TOKEN_EXPIRE_SECONDS": access_token_lifetime,
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "Email address",
        "profile": "Name and username",
        "read": "Read access",
    },
    "DEFAULT_SCOPES": ["openid"],
    "DEVICE_FLOW_INTERVAL": 1,
    "OAUTH_DEVICE_VERIFICATION_URI": f"{BASE_URL}/o/device/",
}
