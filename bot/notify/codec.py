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
from collections.abc import Callable
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
    chosen: Any = type(value) if tp is None else tp
    return _encoder(chosen)(value)


Encoder = Callable[[Any], JSON]


@functools.cache
def _encoder(tp: Any) -> Encoder:
    """Return the function that encodes values of type `tp`, worked out once per type.

    A poll that queues thousands of alerts encodes each message's fields; reading the type
    hints again for every value took most of that time (issue 24).
    """
    if tp is Any:
        return _checked_json
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return _union_encoder(tp, [a for a in args if a is not type(None)])
    if origin is typing.Literal:
        return _same
    if origin in (list, tuple, set, frozenset):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis) and args:
            return _fixed_tuple_encoder(args)
        return _sequence_encoder(args[0] if args else Any, sort=origin in (set, frozenset))
    if origin is dict:
        key_tp, value_tp = args or (Any, Any)
        return _dict_encoder(key_tp, value_tp)
    if not isinstance(tp, type):
        return _refuse(f"cannot encode type {tp!r}")
    if issubclass(tp, enum.Enum):
        return lambda value: tp(value).value  # a StrEnum field may hold its plain value
    if dataclasses.is_dataclass(tp):
        return _dataclass_encoder(tp)
    if tp is Decimal:
        return _instance_of(tp, str)
    if issubclass(tp, dt.date):  # a datetime too
        return _instance_of(tp, lambda value: value.isoformat())
    if tp in (str, int, float, bool, type(None)):
        return _instance_of(tp, _same)
    return _instance_of(tp, _refuse(f"cannot encode a {tp.__name__}"))


def _same(value: Any) -> Any:
    return value


def _refuse(message: str) -> Encoder:
    def refuse(value: Any) -> JSON:
        raise CodecError(message)

    return refuse


def _instance_of(tp: type, then: Encoder) -> Encoder:
    if then is _same:  # str, int, float, bool, None: the value itself, one call less each

        def encode_plain(value: Any) -> JSON:
            if not isinstance(value, tp):
                raise CodecError(f"{value!r} is not a {tp.__name__}")
            return value

        return encode_plain

    def encode_instance(value: Any) -> JSON:
        if not isinstance(value, tp):
            raise CodecError(f"{value!r} is not a {tp.__name__}")
        return then(value)

    return encode_instance


def _union_encoder(tp: Any, options: list[Any]) -> Encoder:
    # each option's test and encoder, worked out on first use (an option may be a dataclass
    # that holds this union); assigned whole, so another thread sees none of it or all of it
    tests: list[tuple[Callable[[Any], bool], Encoder]] | None = None

    def encode_union(value: Any) -> JSON:
        nonlocal tests
        if value is None:
            return None
        if tests is None:
            tests = [(_instance_test(option), _encoder(option)) for option in options]
        for matches, encode_option in tests:
            if matches(value):
                return encode_option(value)
        raise CodecError(f"{value!r} is none of {tp}")

    return encode_union


def _fixed_tuple_encoder(args: tuple[Any, ...]) -> Encoder:
    def encode_tuple(value: Any) -> JSON:
        return [_encoder(a)(v) for v, a in zip(list(value), args, strict=True)]

    return encode_tuple


def _sequence_encoder(item: Any, *, sort: bool) -> Encoder:
    def encode_sequence(value: Any) -> JSON:
        encode_item = _encoder(item)
        encoded = [encode_item(v) for v in value]
        if sort:
            encoded.sort(key=repr)
        return encoded

    return encode_sequence


def _dict_encoder(key_tp: Any, value_tp: Any) -> Encoder:
    def encode_dict(value: Any) -> JSON:
        encode_value = _encoder(value_tp)
        return {_encode_key(k, key_tp): encode_value(v) for k, v in value.items()}

    return encode_dict


def _dataclass_encoder(tp: type) -> Encoder:
    # the fields' encoders are looked up when first used, not here: a dataclass may hold itself.
    # The list is assigned whole, so another thread sees none of it or all of it.
    fields: list[tuple[str, Encoder]] | None = None

    def encode_dataclass(value: Any) -> JSON:
        nonlocal fields
        if not isinstance(value, tp):
            raise CodecError(f"{value!r} is not a {tp.__name__}")
        if fields is None:
            hints = _hints(tp)
            fields = [(f.name, _encoder(hints[f.name])) for f in _init_fields(tp)]
        return {name: encode_field(getattr(value, name)) for name, encode_field in fields}

    return encode_dataclass


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


@functools.cache
def _instance_test(tp: Any) -> Callable[[Any], bool]:
    """Return the test of whether a value is of type `tp` (a union's option), made once."""
    origin = typing.get_origin(tp) or tp
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        return lambda value: value in allowed
    if origin is Any:
        return lambda value: True
    if origin is dt.date:  # a datetime is a date, but is not encoded as one
        return lambda value: type(value) is dt.date
    return lambda value: isinstance(value, origin)


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
