"""Validation problems reported as ``FILE: FIELD.PATH: reason`` lines.

Every user-facing input (campaign, inventory, nvidia-smi capture, mig-parted file) is checked in
full before anything is touched; all problems are collected, then raised together.
"""

from __future__ import annotations

from dataclasses import dataclass

# Exit codes of every miglab command (``miglab``, ``python -m miglab.mlperf.run``, the barrier,
# the manifest tool): 0 done; 1 it ran and failed (a run LoadGen calls INVALID, a file that does
# not match its manifest, a barrier timeout); 2 bad input, nothing touched (one ``error:`` line
# per problem); 3 the lab is busy (another command holds its lock); 130 interrupted.
EXIT_OK, EXIT_FAIL, EXIT_INVALID, EXIT_BUSY, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one field of one input file."""

    file: str
    field: str
    reason: str

    def __post_init__(self) -> None:
        # kept cut: a thousand problems quoting one huge value (YAML aliases) stay small
        for name, limit in (("file", MAX_PATH), ("field", MAX_PATH), ("reason", MAX_REASON)):
            object.__setattr__(self, name, _cut(getattr(self, name), limit))

    def __str__(self) -> str:
        field = self.field or "(top)"
        return f"{_one_line(self.file)}: {_one_line(field)}: {_one_line(self.reason)}"


# A problem line stays readable whatever the input holds: a file name or field of at most
# MAX_PATH characters, a reason of at most MAX_REASON (a huge quoted value is cut, not echoed).
MAX_PATH, MAX_REASON = 300, 400
# A command prints at most MAX_PRINTED problems, then one line saying how many more there are.
MAX_PRINTED = 50


def _cut(text: str, limit: int) -> str:
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def _one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped: a problem is one line,
    even when a file name, a YAML key or a quoted value holds a newline."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def problem_lines(problems: list[Problem], limit: int = MAX_PRINTED) -> list[str]:
    """``error: ...`` lines for ``problems``: the first ``limit`` of them, then a count."""
    lines = [f"error: {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"error: ... and {len(problems) - limit} more problems")
    return lines


class ValidationError(Exception):
    """Raised with every problem found in an input; the CLI prints one line each and exits 2."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class Problems:
    """Collects problems for one file, then raises them all at once."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[Problem] = []

    def add(self, field: str, reason: str) -> None:
        self.items.append(Problem(self.file, field, reason))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ValidationError(self.items)
