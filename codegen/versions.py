"""Version ranges of the Kafka spec language: ``"N"``, ``"A-B"``, ``"N+"`` and ``"none"``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MAX_VERSION = 32767  # Short.MAX_VALUE: the upper end of an open range "N+"


class VersionSyntaxError(ValueError):
    """A version range string that the spec language does not allow."""


@dataclass(frozen=True, order=True)
class Versions:
    """An inclusive range of versions; ``lowest > highest`` is the empty range."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str | int | None, default: "Versions | None" = None) -> "Versions":
        if text is None:
            if default is None:
                raise VersionSyntaxError("missing version range")
            return default
        text = str(text).strip()
        if text == "":
            if default is None:
                raise VersionSyntaxError("empty version range")
            return default
        if text == "none":
            return NONE
        try:
            if text.endswith("+"):
                return cls(_version_number(text[:-1]), MAX_VERSION)
            if "-" in text:
                low, high = text.split("-", 1)
                return cls(_version_number(low), _version_number(high))
            number = _version_number(text)
            return cls(number, number)
        except ValueError as exc:
            raise VersionSyntaxError(f"invalid version range {text!r}: {exc}") from None

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == MAX_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def contains(self, other: "Versions") -> bool:
        """True when every version of ``other`` is in this range (the empty range is in every range)."""
        return other.empty or (self.lowest <= other.lowest and other.highest <= self.highest)

    def intersect(self, other: "Versions") -> "Versions":
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(low, high) if low <= high else NONE

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.lowest, self.highest + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


def _version_number(text: str) -> int:
    text = text.strip()
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a non-negative version number")
    number = int(text)
    if number > MAX_VERSION:
        raise ValueError(f"{number} is above the largest version {MAX_VERSION}")
    return number


NONE = Versions(0, -1)
