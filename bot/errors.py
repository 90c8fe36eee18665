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


def new_reference() -> str:
    """Return a short id that joins what a person was told to the logged traceback."""
    return uuid.uuid4().hex[:8]
