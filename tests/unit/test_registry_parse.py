import threading
from decimal import Decimal

import pytest

from bot.errors import RegistryError
from bot.registry.spec import parse_registry

GOOD = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - name: recsys
    team: ranking
    owners: [U0AAA111]
    channel: C0RECSYS
    match: {tags: {"ml:model": recsys}}
  - name: checkout
    team: ranking
    match: {tags: {application: checkout}}
budgets:
  - {scope: "model:recsys", monthly: 12000, thresholds: [50, 80, 100], forecast: true}
  - {scope: "team:ranking", monthly: 40000, thresholds: [80, 100]}
  - {scope: "model:recsys/stage:training", monthly: 5000}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
attribution:
  model_tag_keys: ["ml:model", model]
  stage_tag_keys: ["ml:stage", stage]
  team_tag_keys: [team]
"""


def test_the_documented_example_parses() -> None:
    spec = parse_registry(GOOD)
    assert [m.name for m in spec.models] == ["recsys", "checkout"]
    assert spec.budgets[2].thresholds == [50, 80, 100]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "team: ranking\n    owners",
            "team: rankng\n    owners",
            "registry:5: models.0.team: unknown team 'rankng'",
        ),
        ("monthly: 40000", "monthly: -5", "registry:14: budgets.1.monthly:"),
        (
            "monthly: 40000",
            "monthly: 1000000000000.01",
            "registry:14: budgets.1.monthly: 1,000,000,000,000.01 is over the limit",
        ),
        ("name: checkout", "name: recsys", "registry:9: models.1.name: duplicate model 'recsys'"),
        ("owners: [U0AAA111]}", "owners: [bob]}", "registry:2: teams.0.owners"),
        ('"team:ranking"', '"team:nobody"', "registry:14: budgets.1.scope: unknown team"),
        (
            '"model:recsys/stage:training"',
            '"model:recsys/stage:lunch"',
            "registry:15: budgets.2.scope",
        ),
    ],
)
def test_errors_name_the_line_and_the_field(old: str, new: str, expected: str) -> None:
    with pytest.raises(RegistryError) as info:
        parse_registry(GOOD.replace(old, new, 1))
    assert expected in str(info.value)


def _parse_in_thread(text: str, seconds: float = 10) -> BaseException | None:
    """Parse in a worker thread; return what it raised, failing if it is still running."""
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            parse_registry(text, source="registry.yaml")
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "parse_registry was still expanding the file"
    return outcome[0]


def billion_laughs(levels: int = 12) -> str:
    """Each level refers to the one below ten times: 10**levels strings once expanded."""
    lines = ['a0: &a0 "lol"']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "teams: []\n" + "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_before_any_expansion() -> None:
    raised = _parse_in_thread(billion_laughs())
    assert isinstance(raised, RegistryError)
    assert str(raised) == (
        "registry.yaml:2: anchors and aliases (&name, *name) are not allowed in a registry "
        "file; write each value out"
    )


def test_a_self_referencing_anchor_is_one_line_not_a_recursion_error() -> None:
    raised = _parse_in_thread("teams: &loop\n  - *loop\n")
    assert isinstance(raised, RegistryError)
    assert str(raised).startswith("registry.yaml:1: anchors and aliases")
    assert "\n" not in str(raised)


@pytest.mark.parametrize(
    ("text", "line", "tag"),
    [
        ("teams: []\nx: !!python/name:os.system\n", 2, "!!python/name:os.system"),
        ("teams:\n  - !!python/object:os.system {}\n", 2, "!!python/object:os.system"),
        ("admins: !custom [U0AAA111]\n", 1, "!custom"),
        ("finops_channel: !!binary Q0ZJTk9QUw==\n", 1, "!!binary"),
    ],
)
def test_non_core_tags_are_refused_with_the_line(text: str, line: int, tag: str) -> None:
    with pytest.raises(RegistryError) as info:
        parse_registry(text, source="registry.yaml")
    assert str(info.value) == (
        f"registry.yaml:{line}: the tag {tag} is not allowed in a registry file; "
        "remove it (plain strings, numbers, lists and mappings only)"
    )


def test_core_tags_are_still_accepted() -> None:
    tagged = GOOD.replace("finops_channel: C0FINOPS", "finops_channel: !!str C0FINOPS")
    spec = parse_registry(tagged)
    assert spec.finops_channel == "C0FINOPS"


def test_broken_yaml_is_one_line_naming_file_and_line() -> None:
    with pytest.raises(RegistryError) as info:
        parse_registry("teams:\n  - {name: a\n  - b: [\n", source="registry.yaml")
    message = str(info.value)
    assert message.startswith("registry.yaml:3: invalid YAML: ")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("teams: []\nteams: []\n", "registry.yaml:2: duplicate key 'teams'"),
        ("teams:\n  - {[a]: 1}\n", "registry.yaml:2: mapping keys must be plain values"),
        ("<<: {teams: []}\n", "registry.yaml:1: merge keys (<<) are not allowed"),
        ("teams: " + "[" * 5000 + "]" * 5000 + "\n", "registry.yaml:1: nested deeper than"),
        ("teams: []\n\x07\n", "registry.yaml:2: invalid YAML: "),
    ],
)
def test_other_yaml_problems_are_one_line(text: str, expected: str) -> None:
    with pytest.raises(RegistryError) as info:
        parse_registry(text, source="registry.yaml")
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("typed", ['"１２３"', '"٣٣"', '"1_000"', '"12,,0,00"', '"1e3"'])
def test_a_quoted_budget_amount_takes_ascii_digits_only(typed: str) -> None:
    """A string amount is held to what the Slack parser accepts: no look-alike digits or `_`."""
    with pytest.raises(RegistryError) as info:
        parse_registry(GOOD.replace("monthly: 40000", f"monthly: {typed}", 1))
    assert "registry:14: budgets.1.monthly:" in str(info.value)
    assert "plain number" in str(info.value)


@pytest.mark.parametrize(
    ("typed", "value"),
    [("40000", "40000"), ('"40000.5"', "40000.5"), ("1_000", "1000"), ("1.5e+3", "1500")],
)
def test_plain_budget_numbers_still_read(typed: str, value: str) -> None:
    spec = parse_registry(GOOD.replace("monthly: 40000", f"monthly: {typed}", 1))
    assert spec.budgets[1].monthly == Decimal(value)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("channel: C0RECSYS", 'channel: C0RECSYS\n    description: "a\\0b"'),
        ('{"ml:model": recsys}', '{"ml:model": "rec\\0sys"}'),
        ('{"ml:model": recsys}', '{"ml\\0model": recsys}'),
    ],
)
def test_a_nul_byte_is_refused_at_its_line(old: str, new: str) -> None:
    """PostgreSQL cannot store one (it was 'unexpected DataError', exit 1); SQLite stored it."""
    with pytest.raises(RegistryError) as info:
        parse_registry(GOOD.replace(old, new, 1))
    message = str(info.value)
    assert message.startswith("registry:") and "NUL byte" in message
    assert message.split(":")[1] in {"7", "8"}
