"""What a results tree holds besides the performance runs: the target-QPS searches (per MIG
profile) and the compliance tests' verdicts, for the report's "Target QPS search" and
"Compliance" tables. Neither is ever counted as a performance run.

* ``<campaign>/qps_search/<profile>/<benchmark>/<MLPerf scenario>/qps_search.json``: the
  mlperf role keeps each profile's search there (Server: the highest target QPS whose short run
  stayed VALID, every trial; Offline: the calibrated expected QPS), written by
  :mod:`miglab.mlperf.guest.qps_search` in the VM that searched.
* ``<campaign>/<scenario>/<vm>/<benchmark>/<MLPerf scenario>/TEST0x/``: a compliance test's run
  (``performance/run_1``) and its verification files (``verify_performance.txt``,
  ``verify_accuracy.txt``; the role writes them on the controller), each ending ``TEST PASS`` or
  ``TEST FAIL``.

A tree is data from guests: files are read only when regular and small, never through a
symbolic link; what cannot be read is a row saying so, not an error.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from miglab.formats.files import MiB, UnreadableFile, read_input_text
from miglab.formats.loadgen import SCENARIOS

SEARCH_DIR = "qps_search"
SEARCH_FILE = "qps_search.json"
VERIFY_FILES = ("verify_performance.txt", "verify_accuracy.txt")
_LIMIT = 1 * MiB

__all__ = ["ComplianceRow", "SearchRow", "read_compliance", "read_searches"]


@dataclass(frozen=True)
class SearchRow:
    campaign: str
    profile: str
    benchmark: str
    mlperf_scenario: str
    kind: str  # "search" (Server) or "calibration" (Offline)
    target_qps: float | None
    trials: int
    latency_bound_ms: float | None
    converged: bool | None
    vm: str | None
    date: str | None
    problem: str | None = None  # why the file says no target, or cannot be read

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ComplianceRow:
    campaign: str
    scenario: str
    vm: str
    benchmark: str
    mlperf_scenario: str
    test: str
    passed: bool | None  # None: not verified (no verify_*.txt)
    reason: str

    @property
    def verdict(self) -> str:
        return "not verified" if self.passed is None else ("PASS" if self.passed else "FAIL")

    def as_json(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}


def _is_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def _subdirs(p: Path) -> list[Path]:
    try:
        return sorted(c for c in p.iterdir() if _is_dir(c))
    except OSError:
        return []


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _search_row(path: Path, campaign: str, profile: str, bench: str, scen: str) -> SearchRow:
    kind = "calibration" if scen == "Offline" else "search"
    blank = dict(campaign=campaign, profile=profile, benchmark=bench, mlperf_scenario=scen,
                 kind=kind, target_qps=None, trials=0, latency_bound_ms=None, converged=None,
                 vm=None, date=None)  # fmt: skip
    try:
        if path.is_symlink() or not path.is_file():
            raise UnreadableFile("not a regular file", "kind")
        data = json.loads(read_input_text(path, limit=_LIMIT))
    except (UnreadableFile, OSError, ValueError) as exc:
        return SearchRow(**blank, problem=f"{path}: unreadable: {exc}")
    if not isinstance(data, dict):
        return SearchRow(**blank, problem=f"{path}: not a JSON object")
    trials = data.get("trials")
    n = len(trials) if isinstance(trials, list) else (1 if kind == "calibration" else 0)
    qps = _number(data.get("target_qps"))
    qps = qps if qps is not None and qps > 0 else None
    error = data.get("error")
    problem = None
    if qps is None:
        problem = f"no target found: {error}" if isinstance(error, str) else "no target found"
    return SearchRow(
        campaign=campaign,
        profile=str(data.get("profile") or profile),
        benchmark=bench,
        mlperf_scenario=scen,
        kind=kind,
        target_qps=qps,
        trials=n,
        latency_bound_ms=_number(data.get("latency_bound_ms")),
        converged=data.get("converged") if isinstance(data.get("converged"), bool) else None,
        vm=str(data["vm"]) if isinstance(data.get("vm"), str) else None,
        date=str(data["date"]) if isinstance(data.get("date"), str) else None,
        problem=problem,
    )


def read_searches(root: str | Path, campaign_level: bool) -> list[SearchRow]:
    """Every ``qps_search/<profile>/<benchmark>/<MLPerf scenario>/qps_search.json`` of the
    campaign folder ``root`` (``campaign_level``) or of each campaign under ``root``."""
    root = Path(root)
    camps = [root] if campaign_level else _subdirs(root)
    rows = []
    for camp in camps:
        base = camp / SEARCH_DIR
        if not _is_dir(base):
            continue
        name = camp.resolve().name if camp == root else camp.name
        for prof in _subdirs(base):
            for bench in _subdirs(prof):
                for scen in _subdirs(bench):
                    f = scen / SEARCH_FILE
                    if os.path.lexists(f):
                        rows.append(_search_row(f, name, prof.name, bench.name, scen.name))
    return rows


def _verdict(test_dir: Path) -> tuple[bool | None, str]:
    """A test folder's verdict from its verify_*.txt: (passed, reason); (None, why) when none."""
    said, passed = [], True
    found = False
    for name in VERIFY_FILES:
        f = test_dir / name
        if not os.path.lexists(f):
            continue
        found = True
        try:
            if f.is_symlink():
                raise UnreadableFile("a symbolic link", "kind")
            text = read_input_text(f, limit=_LIMIT)
        except (UnreadableFile, OSError) as exc:
            said.append(f"{name}: unreadable: {exc}")
            passed = False
            continue
        last = next((x.strip() for x in reversed(text.splitlines()) if x.strip()), "")
        ok = last.startswith("TEST PASS")
        passed = passed and ok
        said.append(f"{name.removesuffix('.txt')}: {last or '(empty)'}")
    if not found:
        return None, "no verify_*.txt (not verified)"
    return passed, "; ".join(said)


def read_compliance(root: str | Path, compliance_dirs: list[Path], campaign_level: bool):
    """One row per compliance test run found by :func:`miglab.formats.loadgen.scan_tree`
    (``.../<scenario>/<vm>/<benchmark>/<MLPerf scenario>/TEST0x/performance/run_<n>``)."""
    root = Path(root)
    rows, seen = [], set()
    for d in compliance_dirs:
        rel = Path(d).relative_to(root).parts
        # ... <MLPerf scenario>/TEST0x/performance/run_n: the test folder is 2 levels up
        if len(rel) < 7 or rel[-4] not in SCENARIOS:
            continue
        test_dir = Path(d).parent.parent
        if test_dir in seen:
            continue
        seen.add(test_dir)
        head = rel[:-2]  # [campaign,] scenario, vm, benchmark, MLPerf scenario, test
        if campaign_level and len(head) == 5:
            camp = root.resolve().name
        elif not campaign_level and len(head) == 6:
            camp = head[0]
        else:
            continue
        scen, vm, bench, mlscen, test = head[-5:]
        passed, reason = _verdict(test_dir)
        rows.append(ComplianceRow(camp, scen, vm, bench, mlscen, test, passed, reason))
    return sorted(rows, key=lambda r: (r.campaign, r.scenario, r.vm, r.benchmark,
                                       r.mlperf_scenario, r.test))  # fmt: skip
