"""Dataclass values to JSON and back, driven by their type hints: how the outbox stores messages.

Decimals are written as strings (exponent kept: "1.10" stays 1.10), dates and datetimes in ISO
8601, enums by value, tuples, sets and lists as lists, dataclasses as objects of their init fields.
A field typed `Any` must already hold JSON (str, int, float, bool, None, lists and str-keyed dicts
of them): anything else would not come back as it went in, so encoding refuses it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import types
import typing
from decimal import Decimal
from typing import Any

JSON = Any  # str | int | float | bool | None | list[JSON] | dict[str, JSON]


class CodecError(TypeError):
    """A value or a stored payload does not match its type."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init]


def encode(value: Any, tp: Any | None = None) -> JSON:
    """Return a dataclass value (or a value of type `tp`) as JSON-ready data."""
    if tp is None:
        tp = type(value)
    if tp is Any:
        return _checked_json(value)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [a for a in args if a is not type(None)]
        for option in options:
            if _is_instance(value, option):
                return encode(value, option)
        raise CodecError(f"{value!r} is none of {tp}")
    if origin is typing.Literal:
        return value
    if origin in (list, tuple, set, frozenset):
        items = list(value)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis) and args:
            return [encode(v, a) for v, a in zip(items, args, strict=True)]
        item = args[0] if args else Any
        encoded = [encode(v, item) for v in items]
        if origin in (set, frozenset):
            encoded.sort(key=repr)
        return encoded
    if origin is dict:
        key_tp, value_tp = args or (Any, Any)
        return {_encode_key(k, key_tp): encode(v, value_tp) for k, v in value.items()}
    if not isinstance(tp, type):
        raise CodecError(f"cannot encode type {tp!r}")
    if issubclass(tp, enum.Enum):
        return tp(value).value  # a StrEnum field may hold its plain value; it compares equal
    if not isinstance(value, tp):
        raise CodecError(f"{value!r} is not a {tp.__name__}")
    if dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        return {f.name: encode(getattr(value, f.name), hints[f.name]) for f in _init_fields(tp)}
    if tp is Decimal:
        return str(value)
    if isinstance(value, dt.date):  # a datetime too
        return value.isoformat()
    if tp in (str, int, float, bool, type(None)):
        return value
    raise CodecError(f"cannot encode a {tp.__name__}")


def decode(tp: Any, data: JSON) -> Any:
    """Return the value of type `tp` that `encode` wrote as `data`."""
    if tp is Any:
        return data
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return decode(option, data)
            except (CodecError, ValueError, TypeError, KeyError) as exc:
                errors.append(exc)
        raise CodecError(f"{data!r} is none of {tp}: {errors}")
    if origin is typing.Literal:
        return data
    if origin in (list, tuple, set, frozenset):
        _expect(data, list, tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis) and args:
            return tuple(decode(a, v) for v, a in zip(data, args, strict=True))
        item = args[0] if args else Any
        return origin(decode(item, v) for v in data)
    if origin is dict:
        _expect(data, dict, tp)
        key_tp, value_tp = args or (Any, Any)
        return {decode(key_tp, k): decode(value_tp, v) for k, v in data.items()}
    if not isinstance(tp, type):
        raise CodecError(f"cannot decode type {tp!r}")
    if dataclasses.is_dataclass(tp):
        _expect(data, dict, tp)
        hints = _hints(tp)
        fields = {f.name: decode(hints[f.name], data[f.name]) for f in _init_fields(tp)}
        return tp(**fields)
    if issubclass(tp, enum.Enum):
        return tp(data)
    if tp is Decimal:
        _expect(data, str, tp)
        return Decimal(data)
    if tp is dt.datetime:
        _expect(data, str, tp)
        return dt.datetime.fromisoformat(data)
    if tp is dt.date:
        _expect(data, str, tp)
        return dt.date.fromisoformat(data)
    if tp is bool:
        _expect(data, bool, tp)
        return data
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise CodecError(f"{data!r} is not an int")
        return data
    if tp is float:
        _expect(data, (int, float), tp)
        return float(data)
    if tp is str:
        _expect(data, str, tp)
        return data
    raise CodecError(f"cannot decode a {tp.__name__}")


def _expect(data: Any, kind: type | tuple[type, ...], tp: Any) -> None:
    if not isinstance(data, kind) or (kind is not bool and isinstance(data, bool)):
        raise CodecError(f"{data!r} does not encode a {tp}")


def _is_instance(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp) or tp
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if origin is Any:
        return True
    if origin is dt.date:  # a datetime is a date, but is not encoded as one
        return type(value) is dt.date
    return isinstance(value, origin)


def _encode_key(key: Any, tp: Any) -> str:
    encoded = encode(key, tp)
    if not isinstance(encoded, str):
        raise CodecError(f"a JSON object key must encode as a string, not {encoded!r}")
    return encoded


def _checked_json(value: Any) -> JSON:
    """Return a value held as `Any` when it is JSON already (it then comes back equal)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list):
        return [_checked_json(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _checked_json(v) for k, v in value.items()}
    raise CodecError(f"{value!r} is not JSON; give its field a type")
