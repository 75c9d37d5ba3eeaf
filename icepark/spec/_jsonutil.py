"""Typed getters for parsed JSON objects that fail with :class:`InvalidMetadataError`.

The messages follow Java's ``JsonUtil`` ("Cannot parse missing long: snapshot-id") so that
errors read the same as the reference implementation's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from icepark.errors import InvalidMetadataError, ValidationError

__all__ = [
    "get_bool",
    "get_int",
    "get_int_list",
    "get_int_or_none",
    "get_list",
    "get_long",
    "get_long_or_none",
    "get_object",
    "get_str",
    "get_str_list",
    "get_str_or_none",
    "get_string_map",
    "require_object",
    "short",
    "wrap_errors",
]

_T = TypeVar("_T")

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def short(value: Any, limit: int = 200) -> str:
    """A repr of ``value`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def require_object(obj: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise InvalidMetadataError(f"Cannot parse {what} from non-object: {short(obj)}")
    return obj


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(obj: Mapping[str, Any], key: str, kind: str, lo: int, hi: int) -> int:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing {kind}: {key}")
    value = obj[key]
    if not _is_int(value) or not lo <= value <= hi:
        article = "an" if kind == "int" else "a"
        raise InvalidMetadataError(f"Cannot parse to {article} {kind} value: {key}: {short(value)}")
    return int(value)


def get_int(obj: Mapping[str, Any], key: str) -> int:
    return _integer(obj, key, "int", _INT_MIN, _INT_MAX)


def get_long(obj: Mapping[str, Any], key: str) -> int:
    return _integer(obj, key, "long", _LONG_MIN, _LONG_MAX)


def get_int_or_none(obj: Mapping[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else get_int(obj, key)


def get_long_or_none(obj: Mapping[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else get_long(obj, key)


def get_bool(obj: Mapping[str, Any], key: str) -> bool:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing boolean: {key}")
    value = obj[key]
    if not isinstance(value, bool):
        raise InvalidMetadataError(f"Cannot parse to a boolean value: {key}: {short(value)}")
    return value


def get_str(obj: Mapping[str, Any], key: str) -> str:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing string: {key}")
    value = obj[key]
    if not isinstance(value, str):
        raise InvalidMetadataError(f"Cannot parse to a string value: {key}: {short(value)}")
    return value


def get_str_or_none(obj: Mapping[str, Any], key: str) -> str | None:
    return None if obj.get(key) is None else get_str(obj, key)


def get_object(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing object: {key}")
    return require_object(obj[key], key)


def get_list(obj: Mapping[str, Any], key: str) -> list[Any]:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing list: {key}")
    value = obj[key]
    if not isinstance(value, list):
        raise InvalidMetadataError(f"Cannot parse {key} from non-array: {short(value)}")
    return value


def get_int_list(obj: Mapping[str, Any], key: str, kind: str = "int") -> list[int]:
    values = get_list(obj, key)
    lo, hi = (_INT_MIN, _INT_MAX) if kind == "int" else (_LONG_MIN, _LONG_MAX)
    for v in values:
        if not _is_int(v) or not lo <= v <= hi:
            raise InvalidMetadataError(
                f"Cannot parse {kind} from non-{kind} value in {key}: {short(v)}"
            )
    return [int(v) for v in values]


def get_str_list(obj: Mapping[str, Any], key: str) -> list[str]:
    values = get_list(obj, key)
    for v in values:
        if not isinstance(v, str):
            raise InvalidMetadataError(
                f"Cannot parse string from non-string value in {key}: {short(v)}"
            )
    return list(values)


def get_string_map(obj: Mapping[str, Any], key: str) -> dict[str, str]:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"Cannot parse missing map: {key}")
    value = obj[key]
    if not isinstance(value, Mapping):
        raise InvalidMetadataError(
            f"Cannot parse string map from non-object value: {key}: {short(value)}"
        )
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str):
            raise InvalidMetadataError(f"Cannot parse to a string value: {k}: {short(v)}")
        out[str(k)] = v
    return out


def wrap_errors(what: str, parse: Callable[[], _T]) -> _T:
    """Run a parser of a nested object, turning its errors into InvalidMetadataError."""
    try:
        return parse()
    except InvalidMetadataError:
        raise
    except ValidationError as exc:
        raise InvalidMetadataError(f"Cannot parse {what}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidMetadataError(f"Cannot parse {what}: {type(exc).__name__}: {exc}") from exc
