from __future__ import annotations

from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.budgets.admin import set_budget
from bot.db.schema import AuditLog, Budget, MLModel, Owner
from bot.registry.ownership import set_model_owners
from bot.registry.plan import diff_registry, kept_entities, plan_import
from bot.registry.spec import parse_registry, registry_to_yaml
from bot.registry.sync import export_registry, import_registry
from tests.support.sample_registry import REGISTRY, load_registry


def snapshot(session: Session) -> str:
    return registry_to_yaml(export_registry(session=session))


def test_import_is_idempotent_and_export_round_trips(session: Session) -> None:
    load_registry(session)
    first = snapshot(session)
    changes = import_registry(parse_registry(REGISTRY), session=session).counts()
    assert changes == {"created": 0, "updated": 0, "removed": 0}
    assert snapshot(session) == first
    again = import_registry(parse_registry(first), session=session).counts()
    assert again == {"created": 0, "updated": 0, "removed": 0}


def test_import_syncs_removals_and_owner_changes(session: Session) -> None:
    load_registry(session)
    smaller = REGISTRY.replace("  - {name: staging, team: platform, owners: [U0PPP111]}\n", "")
    smaller = smaller.replace("owners: [U0AAA111], match", "owners: [U0AAA999], match")
    changes = import_registry(parse_registry(smaller), session=session).counts()
    assert changes["removed"] == 1
    names = set(session.scalars(select(MLModel.name)))
    assert "staging" not in names
    recsys = session.scalars(select(MLModel).where(MLModel.name == "recsys")).one()
    assert [o.user_id for o in recsys.owners] == ["U0AAA999"]
    assert (
        session.scalar(
            select(func.count())
            .select_from(Owner)
            .where(Owner.model_id.is_(None), Owner.team_id.is_(None))
        )
        == 0
    )
    actions = list(session.scalars(select(AuditLog.action)))
    assert actions.count("registry.import") == 2


def test_budget_values_are_exact(session: Session) -> None:
    load_registry(session, REGISTRY.replace("monthly: 12000", "monthly: 12000.4567"))
    budget = session.scalars(select(Budget)).one()
    assert str(budget.monthly_amount.normalize()) == "12000.4567"
    assert budget.thresholds == [50, 80, 100]


CHANGED = (
    REGISTRY.replace("  - {name: staging, team: platform, owners: [U0PPP111]}\n", "")
    .replace("owners: [U0AAA111], match", "owners: [U0AAA999], match")
    .replace("monthly: 12000", "monthly: 13000")
    .replace("budgets:\n", 'budgets:\n  - {scope: "team:platform", monthly: 900}\n')
)


def test_the_diff_names_each_change_and_matches_what_the_import_does(session: Session) -> None:
    load_registry(session)
    assert diff_registry(export_registry(session=session), parse_registry(REGISTRY)).lines() == []
    diff = diff_registry(export_registry(session=session), parse_registry(CHANGED))
    assert diff.lines() == [
        "create budget team:platform",
        "update model recsys: owners U0AAA111 -> U0AAA999",
        "update budget model:recsys: monthly $12,000 -> $13,000",
        "remove model staging",
    ]
    # owners: 2 team owners + 4 model owners; staging's owner goes with it, recsys's is replaced
    assert (diff.size, diff.entities_removed) == (13, 3)
    assert diff.removed_counts == {"teams": 0, "models": 1, "budgets": 0, "owners": 2}
    import_registry(parse_registry(CHANGED), session=session)
    assert diff_registry(export_registry(session=session), parse_registry(CHANGED)).lines() == []


def test_empty_and_truncated_files_need_yes(session: Session) -> None:
    load_registry(session)
    empty = plan_import(parse_registry(""), session=session, source="r.yaml")
    assert empty.refusals == [
        "r.yaml defines no teams and no models (empty or truncated?)",
        "r.yaml would remove 13 of the 13 teams, models, budgets and owners in the registry "
        "(2 teams, 4 models, 1 budget, 6 owners)",
    ]
    truncated = REGISTRY.split("models:")[0]
    plan = plan_import(parse_registry(truncated), session=session, source="r.yaml")
    assert plan.refusals == [
        "r.yaml would remove 9 of the 13 teams, models, budgets and owners in the registry "
        "(4 models, 1 budget, 4 owners)"
    ]
    assert plan_import(parse_registry(CHANGED), session=session, source="r.yaml").refusals == []


def change_in_slack(session: Session) -> None:
    """What `/mlcost budget` and `/mlcost owner` do: a budget raised, recsys's owners changed."""
    set_budget(session=session, user_id="U0AAA111", scope="model:recsys", amount=Decimal(15000))
    set_model_owners(
        session=session, user_id="U0AAA111", model_name="recsys", owners=["U0AAA111", "U0BBB222"]
    )


def test_slack_side_changes_the_import_would_revert_are_named(session: Session) -> None:
    load_registry(session)
    change_in_slack(session)
    plan = plan_import(parse_registry(REGISTRY), session=session, source="r.yaml")
    assert [(c.entity, c.actor, c.what) for c in plan.reverted] == [
        ("budget model:recsys", "U0AAA111", "monthly $12,000 -> $15,000"),
        ("model recsys", "U0AAA111", "owners U0AAA111 -> U0AAA111, U0BBB222"),
    ]
    assert (
        plan.reverted[0]
        .line()
        .startswith("budget model:recsys: monthly $12,000 -> $15,000 by U0AAA111 at ")
    )
    assert plan.refusals == [
        "it would revert 2 changes made in Slack since the last import (listed above)"
    ]
    # a file that already says what Slack set reverts nothing
    matching = REGISTRY.replace("monthly: 12000", "monthly: 15000").replace(
        "owners: [U0AAA111], match", "owners: [U0AAA111, U0BBB222], match"
    )
    assert plan_import(parse_registry(matching), session=session, source="r.yaml").reverted == []
    # once an import has reverted them, they are history, not news
    import_registry(plan.spec, session=session)
    assert plan_import(parse_registry(REGISTRY), session=session, source="r.yaml").reverted == []


def test_keep_slack_changes_imports_the_rest_and_keeps_warning_later(session: Session) -> None:
    load_registry(session)
    change_in_slack(session)
    with_new_team = REGISTRY.replace("models:", "  - {name: search, owners: [U0SSS111]}\nmodels:")
    plan = plan_import(
        parse_registry(with_new_team), session=session, source="r.yaml", keep_slack_changes=True
    )
    assert plan.refusals == [] and plan.reverted == []
    assert [c.entity for c in plan.kept] == ["budget model:recsys", "model recsys"]
    assert plan.diff.lines() == ["create team search"]
    import_registry(plan.spec, session=session, kept=kept_entities(plan.kept))
    budget = session.scalars(select(Budget).where(Budget.scope == "model:recsys")).one()
    assert budget.monthly_amount == Decimal(15000)
    recsys = session.scalars(select(MLModel).where(MLModel.name == "recsys")).one()
    assert sorted(o.user_id for o in recsys.owners) == ["U0AAA111", "U0BBB222"]
    # the kept changes still differ from the file, so the next import names them again
    again = plan_import(parse_registry(with_new_team), session=session, source="r.yaml")
    assert [c.entity for c in again.reverted] == ["budget model:recsys", "model recsys"]


def test_the_diff_names_a_budget_currency_change(session: Session) -> None:
    load_registry(session)
    in_euros = REGISTRY.replace("monthly: 12000", "monthly: 12000, currency: EUR")
    assert in_euros != REGISTRY
    plan = plan_import(parse_registry(in_euros), session=session, source="r.yaml")
    assert plan.diff.lines() == ["update budget model:recsys: currency USD -> EUR"]
    # a budget without `currency:` is the organisation's: no change against a USD budget
    same = plan_import(parse_registry(REGISTRY), session=session, source="r.yaml")
    assert same.diff.lines() == []
