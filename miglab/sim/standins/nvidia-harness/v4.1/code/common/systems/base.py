# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/base.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: the Matchable protocol (== is .matches()),
# MATCH_ANY, MatchAllowList, MatchFloatApproximate (relative tolerance), MatchNumericThreshold
# (a minimum or maximum), MatchableEnum.get_first_match (members tried in definition order, the
# first match wins) and Hardware (equal when the identifiers are). Written anew.
"""Matching primitives of the system descriptions (stand-in)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from enum import Enum


class Matchable(ABC):
    @abstractmethod
    def matches(self, o) -> bool: ...

    def __eq__(self, o) -> bool:
        return self.matches(o)


class MatchAllowList(Matchable):
    """Matches anything equal to one of ``values``."""

    def __init__(self, values):
        self.values = values

    def matches(self, o) -> bool:
        return any(o == v for v in self.values)

    def __hash__(self) -> int:
        return sum(hash(v) for v in self.values)

    def __str__(self) -> str:
        return "MatchAllowList(" + "".join(f"\n\t{v}" for v in self.values) + ")"

    def pretty_string(self) -> str:
        return f"MatchAllowList({self.values!r})"


class MatchAny(Matchable):
    """Matches anything (the field is ignored)."""

    def matches(self, o) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("MatchAny")

    def __str__(self) -> str:
        return "MatchAny()"

    def pretty_string(self) -> str:
        return "MATCH_ANY"


MATCH_ANY = MatchAny()


class MatchFloatApproximate(Matchable):
    """Matches an object of ``o``'s class whose float value is within ``rel_tol`` of ``o``'s."""

    def __init__(self, o, to_float_fn, rel_tol=0.05):
        self.o = o
        self.to_float_fn = to_float_fn
        self.rel_tol = rel_tol

    def matches(self, other) -> bool:
        if other.__class__ == self.o.__class__:
            a, b = self.to_float_fn(self.o), self.to_float_fn(other)
            return math.isclose(a, b, rel_tol=self.rel_tol)
        if other.__class__ == self.__class__:
            return self.o == other.o
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.o) + hash("MatchFloatApproximate")

    def __str__(self) -> str:
        return f"MatchFloatApproximate(value={self.o}, rel_tol={self.rel_tol})"

    def pretty_string(self) -> str:
        return f"approx. {self.o.quantity} {self.o.byte_suffix.name}"


class MatchNumericThreshold(Matchable):
    """Matches an object of ``o``'s class at least (``min_threshold``) or at most ``o``."""

    def __init__(self, o, to_numeric_fn, min_threshold=True):
        self.o = o
        self.to_numeric_fn = to_numeric_fn
        self.min_threshold = min_threshold
        self.compare_symbol = ">=" if min_threshold else "<="

    def matches(self, other) -> bool:
        if other.__class__ == self.o.__class__:
            value, limit = self.to_numeric_fn(other), self.to_numeric_fn(self.o)
            return value >= limit if self.min_threshold else value <= limit
        if other.__class__ == self.__class__:
            return self.o == other.o and self.min_threshold == other.min_threshold
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.o) + hash("MatchNumericThreshold")

    def __str__(self) -> str:
        return f"MatchNumericThreshold({self.compare_symbol}  {self.o})"

    def pretty_string(self) -> str:
        return f"{self.compare_symbol} {self.o.pretty_string()}"


class MatchableEnum(Enum):
    """An Enum of Matchables."""

    @classmethod
    def get_first_match(cls, x):
        """The first member, in definition order, whose value matches ``x``; None if none."""
        for member in cls:
            if member.value.matches(x):
                return member
        return None


class Hardware(Matchable):
    """A detectable component; equal to another of its class when the identifiers are."""

    def identifiers(self):
        raise NotImplementedError

    @classmethod
    def detect(cls):
        raise NotImplementedError

    def matches(self, other) -> bool:
        if other.__class__ == self.__class__:
            return self.identifiers() == other.identifiers()
        return NotImplemented

    def __eq__(self, o) -> bool:
        return self.matches(o)


def layouts_match(mine: dict, other: dict) -> bool:
    """Two configurations' layouts ({hardware: count}) are equal when each entry pairs with an
    equal one of the other side with the same count (Matchables hash apart: no dict lookup)."""
    if len(mine) != len(other):
        return False
    for hw, count in mine.items():
        for other_hw, other_count in other.items():
            if hw == other_hw:
                if count != other_count:
                    return False
                break
        else:
            return False
    return True
