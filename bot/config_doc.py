"""Generate docs/configuration.md from the settings models: `python -m bot.config_doc [--check]`."""

from __future__ import annotations

import argparse
import enum
import sys
import types
import typing
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.config import FEATURES, Feature, SecretStr, SettingField, own_fields

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

INTRO = """\
# Configuration

<!-- Generated from bot/config.py by `python -m bot.config_doc`; edit the models, not this file. -->

Settings come from the environment or a `.env` file (the environment wins; `.env.example` is a
starting point). They are grouped below by the feature that reads them.

List settings (the tag keys, `MLCOST_SCAN_REGIONS`, `MLCOST_SCAN_S3_PATTERNS`) take a
comma-separated list (`us-east-1,eu-west-1`) or a JSON list (`["us-east-1","eu-west-1"]`; use JSON
when an item holds a comma); `MLCOST_SCAN_S3_INVENTORY` takes a JSON object. A setting that does not
read stops every command, `serve` included, with one line naming each bad variable and what it
expects, never its value (it may be a secret), and exit code 2:

```
error: invalid setting MLCOST_SCAN_REGIONS: expected a comma-separated list (a,b) or a JSON list of strings
```
"""  # noqa: E501

OUTRO = """\
AWS credentials come from boto3's standard chain; `AWS_ENDPOINT_URL` is honoured. mlcost only
reads. The IAM actions it calls, by feature, are listed in
[docs/deploy.md](deploy.md#aws-permissions).
"""

TYPE_NAMES: dict[Any, str] = {
    str: "text",
    int: "integer",
    float: "number",
    Decimal: "decimal",
    bool: "`true` or `false`",
    Path: "file path",
    SecretStr: "secret",
}


def render_configuration_doc() -> str:
    """Return docs/configuration.md as generated from the settings models."""
    sections = [INTRO, *(_section(feature) for feature in FEATURES), OUTRO]
    return "\n".join(sections)


def _section(feature: Feature) -> str:
    """Return one feature's heading, its model's docstring and a row per variable."""
    intro = " ".join(line.strip() for line in (feature.model.__doc__ or "").split("\n"))
    rows = [
        f"## {feature.title}",
        "",
        intro.strip(),
        "",
        "| Variable | Type | Default | Meaning |",
        "|---|---|---|---|",
    ]
    for name in own_fields(feature.model):
        field = feature.model.setting_fields()[name]
        cells = (f"`{field.validation_alias}`", _type(field), _default(field), _meaning(field))
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def _type(field: SettingField) -> str:
    """Describe the field's type and its bounds in words."""
    name = _type_name(field.annotation)
    low = high = None
    if field.info.ge is not None:
        low = f"{field.info.ge}"
    elif field.info.gt is not None:
        low = f"> {field.info.gt}"
    if field.info.le is not None:
        high = f"{field.info.le}"
    if low is not None and high is not None:
        return f"{name}, {low}–{high}"
    if low is not None:
        return f"{name}, {low if low.startswith('>') else '≥ ' + low}"
    return name if high is None else f"{name}, ≤ {high}"


def _type_name(annotation: Any) -> str:
    """Name a settings annotation as a reader of the docs would write the value."""
    if annotation in TYPE_NAMES:
        return TYPE_NAMES[annotation]
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (types.UnionType, typing.Union) and len(args) == 1:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " or ".join(f"`{a}`" for a in args)
    if origin is list:
        return "list"
    if origin is dict:
        return "JSON object"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " or ".join(f"`{member.value}`" for member in annotation)
    raise ValueError(f"no documented name for the settings type {annotation!r}")


def _default(field: SettingField) -> str:
    """Show the default as it would be written in the environment."""
    if field.info.shown_default is not None:
        return field.info.shown_default
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (list, dict)):
        return "empty" if not value else "`" + ",".join(value) + "`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return "empty" if value == "" else f"`{value}`"


def _meaning(field: SettingField) -> str:
    """Return the field's description, which every setting must have."""
    if not field.description:
        raise ValueError(f"{field.validation_alias} has no description")
    return field.description


def _cell(text: str) -> str:
    """Escape what would end a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    """Write docs/configuration.md, or with --check exit 1 when it is out of date."""
    parser = argparse.ArgumentParser(prog="python -m bot.config_doc", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--output", type=Path, default=DOC_PATH, help="the file to write")
    args = parser.parse_args(argv)
    text = render_configuration_doc()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run python -m bot.config_doc", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
