"""The value codec between the sandbox's judge and candidate; standard library only.

Values cross as tagged JSON made only of built-in types, so that decoding never runs code
of the sender and never builds anything but exact built-in objects::

    None            -> ["none"]
    True            -> ["bool", true]
    255             -> ["int", "ff"]              (hex: no limit on the digits of an int)
    0.5, nan, -inf  -> ["float", "0x1.0p-1"]      (float.hex: exact, nan and inf included)
    1+2j            -> ["complex", "0x1.0p+0", "0x1.0p+1"]
    "s", b"b"       -> ["str", "s"], ["bytes", "62"]
    list, tuple, set, frozenset -> [tag, [item, ...]];  dict -> ["dict", [[key, value], ...]]

Only those exact types encode (no subclass, so no ``__eq__`` of the sender's making), at
most :data:`MAX_DEPTH` containers deep and :data:`MAX_ITEMS` values in all; a message is at
most :data:`MAX_MESSAGE_BYTES`. Anything else is a :class:`CodecError`. The judge loads
this file by path (the candidate has its own copy in memory, which it may alter: that
changes only what it sends, which the judge decodes with its own copy).
"""

from __future__ import annotations

import json
import os

MAX_DEPTH = 100
"""Containers nested in one value, at most."""
MAX_ITEMS = 1_000_000
"""Values (containers and scalars) in one message, at most."""
MAX_MESSAGE_BYTES = 16 * 2**20
"""Bytes of one encoded message, at most."""

_HEADER_BYTES = 8
_CONTAINERS = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}
_BUILDERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
_ENCODER = json.JSONEncoder(separators=(",", ":"))  # built once: a message may be one of many


class CodecError(ValueError):
    """A value or message outside the codec: wrong type, too deep, too large or malformed."""


def encode(value: object) -> bytes:
    """The message for ``value`` (see the module docstring).

    Raises:
        CodecError: If ``value`` holds anything but the codec's exact built-in types, or
            exceeds its limits.
    """
    counter = [0]
    try:
        text = _ENCODER.encode(_tagged(value, 0, counter))
    except RecursionError as error:
        raise CodecError("value too deep") from error
    if len(text) > MAX_MESSAGE_BYTES:
        raise CodecError(f"value larger than {MAX_MESSAGE_BYTES} bytes encoded")
    return text.encode("ascii")


def decode(message: bytes) -> object:
    """The value of a message from :func:`encode`; only exact built-in objects come out.

    Raises:
        CodecError: On anything that :func:`encode` would not have produced, or that
            exceeds the limits.
    """
    if len(message) > MAX_MESSAGE_BYTES:
        raise CodecError(f"message larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        tree = json.loads(message.decode("ascii"))  # what encode writes: ASCII only
        return _untagged(tree, 0, [0])
    except CodecError:
        raise
    except (ValueError, TypeError, RecursionError, MemoryError, OverflowError) as error:
        raise CodecError(f"malformed message: {type(error).__name__}: {error}"[:300]) from None


def write_message(fd: int, message: bytes) -> None:
    """Write one length-prefixed message to ``fd``."""
    data = len(message).to_bytes(_HEADER_BYTES, "big") + message
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_message(fd: int) -> bytes:
    """Read one length-prefixed message from ``fd``.

    Raises:
        EOFError: If the writer closed its end before a whole message.
        CodecError: If the announced length exceeds :data:`MAX_MESSAGE_BYTES`.
    """
    length = int.from_bytes(_read_exactly(fd, _HEADER_BYTES), "big")
    if length > MAX_MESSAGE_BYTES:
        raise CodecError(f"message of {length} bytes announced; the limit is {MAX_MESSAGE_BYTES}")
    return _read_exactly(fd, length)


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            raise EOFError("the other end closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _count(counter: list[int]) -> None:
    counter[0] += 1
    if counter[0] > MAX_ITEMS:
        raise CodecError(f"more than {MAX_ITEMS} values")


def _tagged(value: object, depth: int, counter: list[int]) -> list:
    _count(counter)
    kind = type(value)
    if value is None:
        return ["none"]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", format(value, "x")]
    if kind is float:
        return ["float", value.hex()]
    if kind is complex:
        return ["complex", value.real.hex(), value.imag.hex()]
    if kind is str:
        return ["str", value]
    if kind is bytes:
        return ["bytes", value.hex()]
    if depth >= MAX_DEPTH and (kind in _CONTAINERS or kind is dict):
        raise CodecError(f"value nested deeper than {MAX_DEPTH}")
    if kind in _CONTAINERS:
        return [_CONTAINERS[kind], [_tagged(item, depth + 1, counter) for item in value]]
    if kind is dict:
        pairs = value.items()
        return [
            "dict",
            [[_tagged(k, depth + 1, counter), _tagged(v, depth + 1, counter)] for k, v in pairs],
        ]
    raise CodecError(f"cannot send a value of type {kind.__name__}")


def _untagged(tree: object, depth: int, counter: list[int]) -> object:
    _count(counter)
    if type(tree) is not list or not tree or type(tree[0]) is not str:
        raise CodecError("malformed message: not a tagged value")
    tag, payload = tree[0], tree[1:]
    scalar = _SCALARS.get(tag)
    if scalar is not None:
        return scalar(payload)
    if depth >= MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH}")
    if len(payload) != 1 or type(payload[0]) is not list:
        raise CodecError(f"malformed {tag}")
    if tag in _BUILDERS:
        return _BUILDERS[tag](_untagged(item, depth + 1, counter) for item in payload[0])
    if tag == "dict":
        return {
            _untagged(key, depth + 1, counter): _untagged(value, depth + 1, counter)
            for key, value in map(_pair, payload[0])
        }
    raise CodecError(f"unknown tag {tag!r}"[:100])


def _pair(item: object) -> list:
    if type(item) is not list or len(item) != 2:
        raise CodecError("malformed dict item")
    return item


def _one(payload: list, kind: type) -> object:
    if len(payload) != 1 or type(payload[0]) is not kind:
        raise CodecError(f"malformed {kind.__name__} payload")
    return payload[0]


def _none(payload: list) -> None:
    if payload:
        raise CodecError("malformed none")


def _int(payload: list) -> int:
    text = _one(payload, str)
    if not text.lstrip("-").isalnum():
        raise CodecError("malformed int")
    return int(text, 16)


def _complex(payload: list) -> complex:
    if len(payload) != 2 or not all(type(part) is str for part in payload):
        raise CodecError("malformed complex")
    return complex(float.fromhex(payload[0]), float.fromhex(payload[1]))


_SCALARS = {
    "none": _none,
    "bool": lambda payload: _one(payload, bool),
    "int": _int,
    "float": lambda payload: float.fromhex(_one(payload, str)),
    "complex": _complex,
    "str": lambda payload: _one(payload, str),
    "bytes": lambda payload: bytes.fromhex(_one(payload, str)),
}
