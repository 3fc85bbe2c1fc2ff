"""MLPerf Inference accuracy: the targets, ``accuracy.txt`` as the submission checker reads it,
and the verdict of an AccuracyOnly run against its target.

Sources (mlcommons/inference, commit b66003e10e2db4b8c36a448b0545ec90fcc6e9e9):

* targets: ``tools/submission/submission_checker/constants.py`` ``accuracy-target``:
  ``"resnet": ("acc", 76.46 * 0.99)``, ``"bert-99": ("F1", 90.874 * 0.99)``,
  ``"bert-99.9": ("F1", 90.874 * 0.999)`` (``../shared/notes`` row L3);
* the lines the checker reads (same file, ``ACC_PATTERN``): ``acc``
  ``^(?:\\{\\"accuracy|accuracy)[\\": ]*=?\\s*([\\d\\.]+).*`` -- the line
  ``vision/classification_and_detection/tools/accuracy-imagenet.py`` prints,
  ``accuracy=76.456%, good=38228, total=50000``; ``F1``
  ``^{[\\"\\']exact_match[\\"\\']\\:\\s*[\\d\\.]+,\\s*[\\"\\']f1[\\"\\']\\:\\s*([\\d\\.]+)}`` -- the
  JSON line ``language/bert/evaluate_v1.1.py`` prints, ``{"exact_match": 83.6, "f1": 90.9}``;
* ``hash=<sha256 of mlperf_log_accuracy.json>``: the checker also wants this line
  (``checks/accuracy_check.py``); ``tools/submission/truncate_accuracy_log.py`` appends it when
  it truncates the log for a submission, and skips a folder whose ``accuracy.txt`` already has
  one. So a run's ``accuracy.txt`` here is what the accuracy script prints (the raw results
  layout), and the log's sha256 is kept in ``miglab_run.json`` (``accuracy.log_sha256``) for
  the export.

Pure: no I/O beyond what the caller hands in.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from miglab.core.mlperf_rules import benchmark_class

__all__ = [
    "ACC_PATTERNS",
    "TARGETS",
    "AccuracyTarget",
    "accuracy_target",
    "accuracy_text",
    "judge",
    "parse_accuracy_text",
]


@dataclass(frozen=True)
class AccuracyTarget:
    """One benchmark's accuracy gate: ``metric`` must reach ``reference x fraction``."""

    metric: str  # the checker's metric name: "acc" (top-1 %) or "F1" (%)
    reference: float  # the reference model's score, percent
    fraction: float  # 0.99 / 0.999

    @property
    def value(self) -> float:
        return self.reference * self.fraction


# The submission checker's accuracy-target (see the module docstring), by model class.
TARGETS = {
    "resnet": AccuracyTarget("acc", 76.46, 0.99),
    "bert-99": AccuracyTarget("F1", 90.874, 0.99),
    "bert-99.9": AccuracyTarget("F1", 90.874, 0.999),
}
# The checker's ACC_PATTERN for those metrics (re.match, per line).
ACC_PATTERNS = {
    "acc": r"^(?:\{\"accuracy|accuracy)[\": ]*=?\s*([\d\.]+).*",
    "F1": r"^{[\"\']exact_match[\"\']\:\s*[\d\.]+,\s*[\"\']f1[\"\']\:\s*([\d\.]+)}",
}


def accuracy_target(benchmark: str | None) -> AccuracyTarget | None:
    """The target of ``benchmark`` (``resnet50``, ``bert-99``, ...); None when it has none here."""
    return TARGETS.get(benchmark_class(benchmark) or "")


def accuracy_text(benchmark: str, scores: dict) -> str:
    """``accuracy.txt`` as the reference accuracy script prints it.

    ResNet50 (``scores``: ``good``, ``total``): ``accuracy=76.456%, good=38228, total=50000``
    (``accuracy-imagenet.py``'s format, 3 decimals). BERT (``exact_match``, ``f1``, percent):
    ``{"exact_match": 83.67, "f1": 90.88}`` (``evaluate_v1.1.py``'s ``json.dumps``)."""
    target = accuracy_target(benchmark)
    if target is None:
        raise ValueError(f"no accuracy target for benchmark {benchmark!r}")
    if target.metric == "acc":
        good, total = int(scores["good"]), int(scores["total"])
        pct = 100.0 * good / total if total else 0.0
        return f"accuracy={pct:.3f}%, good={good}, total={total}\n"
    return json.dumps({"exact_match": scores["exact_match"], "f1": scores["f1"]}) + "\n"


def parse_accuracy_text(text: str, benchmark: str) -> float | None:
    """The metric value ``accuracy.txt`` states for ``benchmark``, read with the checker's
    pattern (first matching line); None when no line matches or the number is not finite."""
    target = accuracy_target(benchmark)
    if target is None:
        return None
    pattern = ACC_PATTERNS[target.metric]
    for line in text.splitlines():
        m = re.match(pattern, line)
        if m:
            try:
                value = float(m.group(1))
            except ValueError:
                return None
            return value if math.isfinite(value) else None
    return None


def judge(benchmark: str, value: float | None) -> dict:
    """The verdict of an accuracy ``value`` (percent) against the benchmark's target:
    ``{metric, value, target, reference, fraction, passed}`` (``passed`` None when there is no
    target or no value)."""
    target = accuracy_target(benchmark)
    if target is None:
        return {"metric": None, "value": value, "target": None, "passed": None}
    passed = None if value is None else value >= target.value
    return {
        "metric": target.metric,
        "value": value,
        "target": round(target.value, 6),
        "reference": target.reference,
        "fraction": target.fraction,
        "passed": passed,
    }
