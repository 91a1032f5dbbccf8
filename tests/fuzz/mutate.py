"""Mutations for the fuzzer: bytes aimed at lengths, counts and varints; JSON aimed at types and
numbers that JSON can spell but Kafka's fields cannot hold."""

from __future__ import annotations

import copy
import random
import struct
from typing import Callable

from varints import uvarint  # tests/, on the path under pytest and in fuzzer.py (via targets)

# Sizes and counts at the edges: sign bits, int16/int32 limits, varint continuation edges.
_EDGES = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)


def _interesting(rng: random.Random) -> bytes:
    value = rng.choice(_EDGES) + rng.choice((-1, 0, 0, 1))
    value &= 0xFFFFFFFF
    form = rng.randrange(5)
    if form == 0:
        return struct.pack(">H", value & 0xFFFF)
    if form == 1:
        return struct.pack(">I", value)
    if form == 2:
        return struct.pack(">Q", value | (0xFFFFFFFF00000000 if rng.random() < 0.3 else 0))
    if form == 3:
        return uvarint(value)
    return uvarint(value << 1 ^ (value >> 31))  # zig-zag


def _tag_section(rng: random.Random) -> bytes:
    """A flexible version's tag buffer with edge values: entry count, then tag and size varints."""
    count = rng.choice((1, 2, 0x7F, 0x7FFFFFFF))
    tag = rng.choice((0, 1, 2, 0x7F, 0x7FFFFFFF))
    size = (
        rng.choice(_EDGES) + rng.choice((-1, 0, 1)) if rng.random() < 0.7 else -rng.randrange(1, 13)
    )
    return uvarint(count) + uvarint(tag) + uvarint(size & 0xFFFFFFFF)


def _one(rng: random.Random, data: bytearray, other: Callable[[], bytes]) -> None:
    size = len(data)
    choice = rng.randrange(12)
    pos = rng.randrange(size + 1)
    if choice == 0 and size:
        data[pos % size] ^= 1 << rng.randrange(8)
    elif choice == 1 and size:
        data[pos % size] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    elif choice in (2, 3):  # overwrite with an interesting integer
        value = _interesting(rng)
        data[pos : pos + len(value)] = value
    elif choice == 4:
        data[pos:pos] = _interesting(rng)
    elif choice == 5 and size:  # delete a range
        del data[pos : pos + rng.choice((1, 1, 2, 4, rng.randrange(1, size + 1)))]
    elif choice == 6 and size:  # repeat a range
        start = rng.randrange(size)
        piece = data[start : start + rng.randrange(1, 64)]
        data[pos:pos] = piece * rng.choice((1, 2, 16, 256))
    elif choice == 7:  # splice in part of another seed
        donor = other()
        if donor:
            start = rng.randrange(len(donor))
            data[pos:pos] = donor[start : start + rng.randrange(1, 128)]
    elif choice == 8:  # truncate
        del data[pos:]
    elif choice == 9:  # a tagged-field section: count, tag, size; often the message's last one
        if rng.random() < 0.5:
            pos = max(0, size - rng.randrange(4))
        del data[pos : pos + rng.randrange(4)]
        data[pos:pos] = _tag_section(rng)
    else:
        data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))


def mutate_bytes(rng: random.Random, seed: bytes, other: Callable[[], bytes]) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        _one(rng, data, other)
    return bytes(data)


_JSON_VALUES = (
    None,
    True,
    0,
    -1,
    1.5,
    float("inf"),
    float("-inf"),
    float("nan"),
    1 << 63,
    -(1 << 63) - 1,
    1 << 200,
    "",
    "\ud800",
    "a\udfffb",
    "AAAA",
    "not base64!",
    "x" * 40000,
    [],
    {},
    [None],
)


def _paths(node, prefix=()) -> list[tuple]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, prefix + (index,))
    return found


def mutate_json(rng: random.Random, seed: object) -> object:
    """Replace, delete or duplicate one to three members of a copy of ``seed``."""
    obj = copy.deepcopy(seed)
    for _ in range(rng.choice((1, 1, 2, 3))):
        path = rng.choice(_paths(obj))
        if not path:
            obj = _json_value(rng) if rng.random() < 0.05 else obj
            continue
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        action = rng.randrange(6)
        if action == 0 and isinstance(parent, dict):
            del parent[last]
        elif action == 1 and isinstance(parent, list):
            parent.insert(last, copy.deepcopy(parent[last]))
        elif action == 2 and isinstance(parent[last], int) and not isinstance(parent[last], bool):
            parent[last] += rng.choice((-1, 1, 1 << 31, -(1 << 31), 1 << 63))
        else:
            parent[last] = _json_value(rng)
    return obj


def _json_value(rng: random.Random) -> object:
    return copy.deepcopy(rng.choice(_JSON_VALUES))  # a fresh list or dict, never a shared one
