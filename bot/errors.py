"""Domain errors: each carries a message that is safe to show a user."""

from __future__ import annotations

import uuid


class MlcostError(Exception):
    """Base of every error whose message may be shown to a user as is."""


class RegistryError(MlcostError):
    """The registry file is invalid; nothing was changed."""


class IngestError(MlcostError):
    """A billing source could not be read; nothing was changed."""


class NotFoundError(MlcostError):
    """A named model, team or budget does not exist."""


class PermissionDenied(MlcostError):
    """The user may not make this change."""


class UsageError(MlcostError):
    """A command was malformed."""


class CurrencyError(MlcostError):
    """Amounts in different currencies would be added, or the currency setting contradicts data."""


class AwsUnavailable(MlcostError):
    """AWS could not be called at all (no credentials, no region): nothing was read from it."""


# botocore's exceptions by name: this module stays free of heavy imports
_AWS_SETUP_PROBLEMS = {
    "NoCredentialsError": "no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or run with an instance or task role",
    "NoRegionError": "no AWS region configured: set AWS_REGION or AWS_DEFAULT_REGION",
}


def aws_error_reason(exc: BaseException) -> str:
    """Describe a boto3 failure in one line: what to set, `Code: Message`, or the exception."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _AWS_SETUP_PROBLEMS:
            return _AWS_SETUP_PROBLEMS[cls.__name__]
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        return f"{response['Error'].get('Code')}: {response['Error'].get('Message')}"
    return f"{type(exc).__name__}: {exc}"


def new_reference() -> str:
    """Return a short id that joins what a person was told to the logged traceback."""
    return uuid.uuid4().hex[:8]
