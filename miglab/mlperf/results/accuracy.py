"""The AccuracyOnly runs of a results tree, judged here against the benchmark's target, for the
report's "Accuracy" table and ``results.json``'s ``accuracy``. They are never counted as
performance runs.

``<campaign>/<scenario>/<vm>/<benchmark>/<MLPerf scenario>/accuracy/run_<n>/``: the runner
writes ``accuracy.txt`` (the reference accuracy script's line: ``accuracy=76.456%, good=...``
for ResNet50, ``{"exact_match": ..., "f1": ...}`` for BERT) beside ``mlperf_log_accuracy.json``
and ``miglab_run.json``. The value is read from ``accuracy.txt`` with the submission checker's
pattern and compared with the target here (:mod:`miglab.core.accuracy`), not taken from the
guest's own verdict; ``miglab_run.json`` adds whether the run used a subset of the dataset.
A tree is data from guests: files are read only when regular and small, never through a link.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from miglab.core.accuracy import accuracy_target, judge, parse_accuracy_text
from miglab.formats.files import MiB, UnreadableFile, read_input_text

__all__ = ["ACCURACY_TXT", "AccuracyRow", "read_accuracy_runs"]

ACCURACY_TXT = "accuracy.txt"
_LIMIT = 1 * MiB


@dataclass(frozen=True)
class AccuracyRow:
    campaign: str
    scenario: str
    vm: str
    benchmark: str
    mlperf_scenario: str
    run: int
    metric: str | None  # "acc" (top-1 %) / "F1" (%)
    value: float | None
    target: float | None
    passed: bool | None  # None: no accuracy.txt or no target for the benchmark
    subset: bool  # scored over part of the dataset only (--dataset-count)
    reason: str

    @property
    def verdict(self) -> str:
        return "not scored" if self.passed is None else ("PASS" if self.passed else "FAIL")

    def as_json(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}


def _text(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return read_input_text(path, limit=_LIMIT)
    except (UnreadableFile, OSError, UnicodeDecodeError):
        return None


def accuracy_row(run_dir: Path, where: tuple) -> AccuracyRow:
    """The row of one ``accuracy/run_<n>`` folder; ``where`` is its place in the layout
    ``(campaign, scenario, vm, benchmark, MLPerf scenario, kind, run)``."""
    camp, scen, vm, bench, mlscen, _kind, run = where
    target = accuracy_target(bench)
    meta_text = _text(run_dir / "miglab_run.json")
    try:
        meta = json.loads(meta_text) if meta_text else {}
    except ValueError:
        meta = {}
    acc = meta.get("accuracy") if isinstance(meta, dict) else None
    subset = bool(isinstance(acc, dict) and acc.get("subset") is True)
    text = _text(run_dir / ACCURACY_TXT)
    if target is None:
        value, passed, reason = None, None, f"no accuracy target for {bench}"
    elif text is None:
        value, passed, reason = None, None, f"no readable {ACCURACY_TXT}"
    else:
        value = parse_accuracy_text(text, bench)
        if value is None:
            passed, reason = None, f"{ACCURACY_TXT} has no {target.metric} line the checker reads"
        else:
            passed = judge(bench, value)["passed"]
            sign = ">=" if passed else "<"
            reason = (
                f"{target.metric} {value:.3f} % {sign} target {target.value:.3f} % "
                f"({target.reference} x {target.fraction})"
            )
    if subset:
        reason += "; over a subset of the dataset"
    return AccuracyRow(
        camp,
        scen,
        vm,
        bench,
        mlscen,
        run,
        target.metric if target else None,
        value,
        round(target.value, 6) if target else None,
        passed,
        subset,
        reason,
    )


def read_accuracy_runs(found: list[tuple[Path, tuple]]) -> list[AccuracyRow]:
    """One row per ``(run folder, place)`` of the accuracy runs the aggregation found."""
    rows = [accuracy_row(Path(d), where) for d, where in found]
    return sorted(
        rows, key=lambda r: (r.campaign, r.scenario, r.vm, r.benchmark, r.mlperf_scenario, r.run)
    )
