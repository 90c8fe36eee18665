"""Credentials out of anything shown: URLs (userinfo, credential-looking query parameters) and text.

`mask_url` is the one way a configured URL is shown: in errors, the ingestion record's location,
a poll source's name, /healthz and logs. `mask_text` masks what a line of free text may carry:
every URL in it, AWS access key ids, Slack tokens and `secret=...` pairs.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
# query parameter names (lower case, `-` and `_` removed) that carry a credential
CREDENTIAL_PARAMETERS = frozenset(
    {
        "key",
        "sig",
        "code",
        "auth",
        "pass",
        "pwd",
        "jwt",
        "session",
        "sessionid",
    }
)
# ... and any name containing one of these
CREDENTIAL_WORDS = (
    "token",
    "secret",
    "passw",
    "signature",
    "credential",
    "apikey",
    "accesskey",
    "privatekey",
    "auth",
)
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+")
_TEXT_REDACTIONS = (
    (re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA)[0-9A-Z]{16}\b"), MASK),  # AWS access key ids
    (
        re.compile(
            r"(?i)\b(password|passwd|secret|token|signature|credential|api[_-]?key|"
            r"x-amz-security-token|x-amz-signature|x-amz-credential)([\"']?\s*[=:]\s*)"
            r"(?!\*\*\*)[^\s&,;]+"
        ),
        r"\1\2" + MASK,
    ),
    (re.compile(r"\bxox[abposr]-[0-9A-Za-z-]+"), MASK),  # Slack tokens
)


def is_credential_parameter(name: str) -> bool:
    """Return whether a query parameter's name says its value is a credential."""
    folded = unquote(name).lower().replace("-", "").replace("_", "").replace(".", "")
    return folded in CREDENTIAL_PARAMETERS or any(word in folded for word in CREDENTIAL_WORDS)


def mask_query(query: str) -> str:
    """Return a query string with each credential-looking parameter's value replaced by ***."""
    if not query:
        return query
    pairs = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if equals and value and is_credential_parameter(name):
            value = MASK
        pairs.append(name + equals + value)
    return "&".join(pairs)


def mask_url(url: str) -> str:
    """Return the URL as it may be shown: password (or a lone user name) and credential
    parameters (`token`, `api_key`, `X-Amz-Signature`, `sig`, ...) replaced by ***."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return _mask_unparsable(url)
    netloc = parts.netloc
    if username is not None or password is not None:
        host = netloc.rpartition("@")[2]
        netloc = f"{username}:{MASK}@{host}" if password is not None else f"{MASK}@{host}"
    query = mask_query(parts.query)
    fragment = mask_query(parts.fragment) if "=" in parts.fragment else parts.fragment
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url  # nothing to hide: keep it exactly as written
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _mask_unparsable(url: str) -> str:
    """Mask what can be told of a URL urlsplit refuses (a bad port, say): userinfo and query."""
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        authority = MASK + "@" + authority.rpartition("@")[2]
    path, question, query = tail.partition("?")
    return scheme + sep + authority + slash + path + question + mask_query(query)


def mask_text(text: str) -> str:
    """Return the text with every URL masked (mask_url), AWS key ids, Slack tokens and
    `secret=...` values replaced by ***."""
    if "://" in text:
        text = _URL.sub(lambda match: mask_url(match.group(0)), text)
    for pattern, replacement in _TEXT_REDACTIONS:
        text = pattern.sub(replacement, text)
    return text
