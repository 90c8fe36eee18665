"""Every waste check and resource scanner mlcost runs, and what their findings are called.

A check over the ledger (bot/waste/checks.py, `LedgerCheck`) or a scanner of the account's
resources (bot/waste/scan/, `ResourceScanner`) is one declaration carrying its kind, its label,
its wording and its fix. The lists below name the built-in ones in the order they run; `register`
adds one more. The scan, the ledger's findings, Stop it, closing and the Slack and terminal words
all look a kind or an action up here (docs/layout.md, "Adding a waste check").
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.waste import checks
from bot.waste.checks import LedgerCheck
from bot.waste.scan import ebs, ec2, eks, s3, sagemaker
from bot.waste.scan.model import FindingKind, StopAction, own_id
from bot.waste.scan.scanner import ResourceScanner

# the order of each list is the order they run (and of equal-cost findings in a report)
_SCANNERS: list[ResourceScanner] = [
    ec2.GPU_INSTANCES,
    sagemaker.ENDPOINTS,
    sagemaker.NOTEBOOKS,
    sagemaker.TRAINING_JOBS,
    sagemaker.STUDIO_APPS,
    ebs.VOLUMES,
    ebs.SNAPSHOTS,
    eks.GPU_NODE_GROUPS,
    s3.PREFIXES,
]
_LEDGER_CHECKS: list[LedgerCheck] = [
    checks.ORPHANED,
    checks.STALE_CHECKPOINTS,
    checks.IDLE_ENDPOINT,
    checks.KILLED_STILL_SPENDING,
    checks.FIXED_SERVING,
    checks.IDLE_CLUSTER,
    checks.IDLE_GPU,
    checks.SPOT_CANDIDATE,
]

NO_STOP_WORDS = "records the approval"  # an action no scanner declares


def register(entry: ResourceScanner | LedgerCheck) -> None:
    """Add a scanner or a ledger check after the built-in ones (its kinds must be new)."""
    taken = set(_resource_kinds()) | {c.kind for c in _LEDGER_CHECKS}
    new = [k.kind for k in entry.kinds] if isinstance(entry, ResourceScanner) else [entry.kind]
    clash = sorted(taken.intersection(new))
    if clash:
        raise ValueError(f"waste kind(s) already registered: {', '.join(clash)}")
    if isinstance(entry, ResourceScanner):
        _SCANNERS.append(entry)
    else:
        _LEDGER_CHECKS.append(entry)


def unregister(entry: ResourceScanner | LedgerCheck) -> None:
    """Remove a scanner or a ledger check added by `register` (tests)."""
    if isinstance(entry, ResourceScanner):
        _SCANNERS.remove(entry)
    else:
        _LEDGER_CHECKS.remove(entry)


def scanners() -> tuple[ResourceScanner, ...]:
    """Return every resource scanner, in the order they run."""
    return tuple(_SCANNERS)


def ledger_checks() -> tuple[LedgerCheck, ...]:
    """Return every check over the ledger, in the order they run."""
    return tuple(_LEDGER_CHECKS)


def scanner_named(name: str) -> ResourceScanner | None:
    """Return the scanner a failure or note names, or None."""
    return next((s for s in _SCANNERS if s.name == name), None)


def _resource_kinds() -> dict[str, FindingKind]:
    return {k.kind: k for s in _SCANNERS for k in s.kinds}


def _stop_actions() -> dict[str, StopAction]:
    return {a.action: a for s in _SCANNERS for a in s.stops}


def resource_kinds() -> Mapping[str, FindingKind]:
    """Return every kind of resource finding by its name."""
    return _resource_kinds()


def stop_actions() -> Mapping[str, StopAction]:
    """Return every fix a resource finding may recommend, by its action name."""
    return _stop_actions()


def kind_label(kind: str) -> str:
    """Return a resource finding's kind in words (the kind itself when unknown)."""
    found = _resource_kinds().get(kind)
    return found.label if found else kind


def ledger_ids(
    kind: str, resource_id: str, target: Mapping[str, str], members: tuple[str, ...]
) -> set[str]:
    """Return the ledger resource ids (lower-cased) a resource finding stands for."""
    found = _resource_kinds().get(kind)
    return (found.ledger_ids if found else own_id)(resource_id, target, members)


def stop_action(action: str) -> StopAction | None:
    """Return the fix an action names, or None."""
    return _stop_actions().get(action)


def stop_words(action: str) -> str:
    """Say what Stop it does for an action, before anyone presses it."""
    found = _stop_actions().get(action)
    return found.words if found else NO_STOP_WORDS


def ledger_check(kind: str) -> LedgerCheck | None:
    """Return the ledger check of a kind, or None."""
    return next((c for c in _LEDGER_CHECKS if c.kind == kind), None)


def ledger_label(kind: str) -> str:
    """Return a ledger finding's kind in words (the kind itself when unknown)."""
    found = ledger_check(kind)
    return found.label if found else kind
