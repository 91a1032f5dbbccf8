"""Route labels: integers that Spark's hash partitioning sends to chosen partitions.

``DataFrame.repartition(n, column)`` puts a row in partition ``pmod(murmur3(value, seed 42), n)``
(Spark's ``HashPartitioning``, the same hash as the SQL function ``hash``). Labels 0..n-1 would
collide: about a third of the partitions would get none and others two or three, so the split plan's
second stage would run unevenly sized tasks and leave a core idle at the end. ``partition_labels(n)``
instead gives, for each partition ``p``, a small integer that lands in ``p``.

Correctness never depends on this: rows with equal labels always meet in one partition, whatever the
hash. Only the balance does, and a test checks the labels against a Spark session.
"""

from __future__ import annotations

_SEED = 42  # the seed of Spark's Murmur3Hash expression
_MASK = 0xFFFFFFFF


def _rotate_left(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def spark_hash_int(value: int) -> int:
    """MurmurHash3 (x86, 32-bit) of one 4-byte integer with Spark's seed, as a signed int:
    what Spark's ``hash(value)`` returns for an INT column."""
    block = (value & _MASK) * 0xCC9E2D51 & _MASK
    block = _rotate_left(block, 15) * 0x1B873593 & _MASK
    state = _rotate_left(_SEED ^ block, 13)
    state = (state * 5 + 0xE6546B64) & _MASK
    state ^= 4  # the key's length in bytes
    state ^= state >> 16
    state = state * 0x85EBCA6B & _MASK
    state ^= state >> 13
    state = state * 0xC2B2AE35 & _MASK
    state ^= state >> 16
    return state - (1 << 32) if state & 0x80000000 else state


def spark_partition(value: int, partitions: int) -> int:
    """The partition ``repartition(partitions, column)`` gives an INT column holding ``value``."""
    return spark_hash_int(value) % partitions  # Python's % is Spark's pmod for a positive divisor


def partition_labels(partitions: int) -> list[int]:
    """``labels[p]``: the least non-negative integer Spark's hash partitioning puts in partition p."""
    labels: list[int | None] = [None] * partitions
    missing, value = partitions, 0
    while missing:
        slot = spark_partition(value, partitions)
        if labels[slot] is None:
            labels[slot] = value
            missing -= 1
        value += 1
    return [label for label in labels if label is not None]
