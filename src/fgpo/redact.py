"""Credentials never leave the process: redact them from URLs and configs before they are
logged (MLflow params and tags), printed or written (tables, journals, reports).

A URL's password (`postgresql://user:PASS@host/db`), secret-looking query parameters
(`?password=...`, `?token=...`) and values under secret-looking keys are replaced by `***`.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from fgpo.errors import InputError

MASK = "***"
SECRET_KEY = re.compile(r"(^|[._-])(pass|passwd|password|secret|token|api_?key|credentials?)$",
                        re.I)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """`url` with its password and secret query values masked; every other character kept
    (no re-assembly: `urlunsplit` would turn `sqlite:///a.db` into `sqlite:/a.db`)."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    out = url
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        if ":" in userinfo:
            user = userinfo.split(":", 1)[0]
            out = out.replace(f"//{userinfo}@", f"//{user}:{MASK}@", 1)
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(SECRET_KEY.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if SECRET_KEY.search(k) else v) for k, v in pairs],
                              safe="*")
            out = out.replace(f"?{parts.query}", f"?{query}", 1)
    return out


def redact_text(text: str) -> str:
    """Every URL inside free text (an error message, a log line) redacted."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def redact(obj: Any, key: str = "") -> Any:
    """A copy of a config value (dicts and lists recursed) with every credential masked."""
    if isinstance(obj, dict):
        return {k: redact(v, str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v, key) for v in obj)
    if isinstance(obj, str):
        # `*_env` fields name an environment variable, never hold the secret itself
        if SECRET_KEY.search(key) and not key.endswith("_env") and obj:
            return MASK
        return redact_text(obj)
    return obj


def find_secret(obj: Any, where: str = "", key: str = "") -> str | None:
    """The dotted path of the first credential held in a config value: a URL with a password
    or a secret query value, or a value under a secret-looking key; None when there is none."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if found := find_secret(v, f"{where}.{k}" if where else str(k), str(k)):
                return found
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            if found := find_secret(v, f"{where}[{i}]", key):
                return found
    elif isinstance(obj, str) and redact(obj, key) != obj:
        return where
    return None


def url_with_password_from_env(url: str, env_var: str, section: str = "sweep") -> str:
    """Insert the password held in environment variable `env_var` into `url`'s user info.

    Lets params.yaml carry `postgresql://user@host/db` and the secret stay in the environment
    (`<section>.storage_password_env` names the variable).
    """
    if not env_var:
        return url
    password = os.environ.get(env_var)
    if password is None:
        raise InputError(f"environment variable {env_var} (the storage password) is not set",
                         field=f"{section}.storage_password_env")
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        raise InputError("a password from the environment needs a user in the URL "
                         "(scheme://user@host/db)", field=f"{section}.storage")
    userinfo, host = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    netloc = f"{user}:{quote(password, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
