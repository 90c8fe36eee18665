"""Change a model's owners and channel: permission-checked, audited with who and when."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from bot.db.locks import hold_registry_lock
from bot.db.schema import AuditLog, Owner
from bot.errors import PermissionDenied, UsageError
from bot.registry.catalog import can_manage_model, find_model, model_owner_ids

MAX_OWNERS = 20


@dataclass(frozen=True)
class OwnershipChange:
    model: str
    owners_before: list[str]
    owners_after: list[str]
    channel_before: str | None
    channel_after: str | None


def set_model_owners(
    *,
    session: Session,
    user_id: str,
    model_name: str,
    owners: list[str],
    channel: str | None = None,
) -> OwnershipChange:
    """Replace a model's owners (and optionally its channel); admins and current owners only."""
    wanted = list(dict.fromkeys(owners))
    if not wanted:
        raise UsageError("name at least one owner, e.g. `@alice`")
    if len(wanted) > MAX_OWNERS:
        raise UsageError(f"at most {MAX_OWNERS} owners per model")
    hold_registry_lock(session, exclusive=False)  # an import running now finishes first
    model = find_model(session, model_name)
    if not can_manage_model(session, user_id, model):
        raise PermissionDenied(
            f"Only the current owners of `{model.name}` or an admin can change its owners."
        )
    before = sorted(o.user_id for o in model.owners)
    channel_before = model.channel
    keep = [o for o in model.owners if o.user_id in wanted]
    have = {o.user_id for o in keep}
    model.owners[:] = keep + [Owner(user_id=u) for u in wanted if u not in have]
    if channel is not None:
        model.channel = channel
    session.add(
        AuditLog(
            actor=user_id,
            action="model.owners.set",
            target=f"model:{model.name}",
            detail={
                "owners": {"before": before, "after": sorted(wanted)},
                "channel": {"before": channel_before, "after": model.channel},
            },
        )
    )
    session.flush()
    return OwnershipChange(
        model.name, before, sorted(model_owner_ids(model)), channel_before, model.effective_channel
    )
