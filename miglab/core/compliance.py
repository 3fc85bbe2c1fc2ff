"""MLPerf Inference compliance tests TEST01 and TEST04: their ``audit.config``, where their logs
go, and their verification, ported from MLCommons' scripts (pure; logs read with
:mod:`miglab.formats.loadgen`).

Sources (mlcommons/inference, commit b66003e10e2db4b8c36a448b0545ec90fcc6e9e9):

* ``compliance/TEST01/resnet50/audit.config``, ``compliance/TEST01/bert/audit.config`` (identical:
  ``*.*.mode = 2``, ``accuracy_log_rng_seed = 720381539243781796``,
  ``accuracy_log_sampling_target = 4096``) and ``compliance/TEST04/audit.config`` (the
  ``*.<Scenario>`` lines: mode 2, ``performance_issue_unique = 0``, ``performance_issue_same = 1``,
  ``performance_issue_same_index = 3``) -- :data:`AUDIT_CONFIGS`, verbatim but for the comments;
* which benchmarks need which test: ``tools/submission/submission_checker/constants.py``
  ``models_TEST01`` (``resnet``, ``bert-99``, ``bert-99.9``, ...) and ``models_TEST04``
  (``resnet``, ...; not BERT: ``compliance/TEST04/README.md``, "Exempt Benchmarks") --
  :data:`APPLIES`;
* the layout the checker reads (``constants.py`` ``TEST01_PERF_PATH`` ... from v6.0, and
  ``checks/compliance_check.py`` ``dir_exists_check``): ``<benchmark>/<scenario>/TEST0x/`` beside
  ``performance/`` and ``accuracy/``, holding ``verify_performance.txt``,
  ``performance/run_1/mlperf_log_detail.txt`` and, TEST01, ``verify_accuracy.txt`` and
  ``accuracy/mlperf_log_accuracy.json`` (``compliance/TEST01/run_verification.py``);
* LoadGen reads the audit file given as ``audit_config_filename`` (the Python binding's default
  is ``audit.config`` in the working directory: ``loadgen/bindings/python_api.cc``) and applies its
  ``*.<Scenario>.*`` lines with model ``*`` and ``conf_type`` 2, logging "Found Audit Config file"
  (``loadgen/loadgen.cc``, ``StartTestWithLogSettings``);
* :func:`verify_accuracy`: ``compliance/TEST01/verify_accuracy.py`` (its default JSON mode: every
  sampled ``qsl_idx`` of the compliance run is looked up in the accuracy run's log and the first
  element of the two results, read as ``--dtype`` (default ``byte``), must be equal; PASS needs no
  mismatch and at least one match);
* :func:`verify_performance_test01`: ``compliance/TEST01/verify_performance.py`` (both detail logs
  VALID, same scenario, Server the same target latency; the test's score within +-10 % of the
  reference's, +-20 % for SingleStream at most 200000 ns / MultiStream at most 1600000 ns);
* :func:`verify_performance_test04`: ``compliance/TEST04/verify_performance.py`` (one-sided: the
  test may not be 10 % or more *faster*; SingleStream/MultiStream as 1e9 / the early-stopping
  latency; same thresholds). The script reads the summary logs; miglab reads the same keys from
  the detail logs (six significant digits instead of the summary's two decimals).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from miglab.formats.files import MiB, UnreadableFile, read_input_text
from miglab.formats.loadgen import DETAIL_LOG, DetailLog, read_detail_log

__all__ = [
    "ACCURACY_LOG",
    "APPLIES",
    "tests_for",
    "AUDIT_CONFIG",
    "AUDIT_CONFIGS",
    "SOURCE_COMMIT",
    "TESTS",
    "Verdict",
    "audit_config",
    "compliance_dir",
    "verify_accuracy",
    "verify_performance_test01",
    "verify_performance_test04",
]

SOURCE_COMMIT = "b66003e10e2db4b8c36a448b0545ec90fcc6e9e9"  # mlcommons/inference
TESTS = ("TEST01", "TEST04")
AUDIT_CONFIG = "audit.config"
ACCURACY_LOG = "mlperf_log_accuracy.json"
ACCURACY_LOG_LIMIT = 1024 * MiB

_HEAD = (
    "# The format of this config file is 'key = value'.\n"
    "# The key has the format 'model.scenario.key'. Value is mostly int64_t.\n"
    "# Model maybe '*' as wildcard. In that case the value applies to all models.\n"
    "# All times are in milli seconds\n"
)
_TEST01 = (
    _HEAD
    + "\n# mode dictionary (0 = submission, 1 = accuracy, 2 = performance, 3 = find peak perf)\n"
    "*.*.mode = 2\n"
    "*.*.accuracy_log_rng_seed = 720381539243781796\n"
    "*.*.accuracy_log_sampling_target = 4096\n"
)
_TEST04 = _HEAD + "".join(
    f"*.{s}.mode = 2\n"
    f"*.{s}.performance_issue_unique = 0\n"
    f"*.{s}.performance_issue_same = 1\n"
    f"*.{s}.performance_issue_same_index = 3\n"
    for s in ("MultiStream", "Offline", "SingleStream", "Server")
)
# (test, miglab benchmark) -> audit.config text (compliance/TEST01/<benchmark>/, compliance/TEST04/)
AUDIT_CONFIGS = {
    ("TEST01", "resnet50"): _TEST01,
    ("TEST01", "bert"): _TEST01,
    ("TEST04", "resnet50"): _TEST04,
}
# test -> the miglab benchmarks the submission checker asks it for (models_TEST01 / _TEST04)
APPLIES = {"TEST01": ("resnet50", "bert"), "TEST04": ("resnet50",)}
# detail-log keys that show the audit.config was applied
_AUDIT_KEYS = {
    "TEST01": {"requested_accuracy_log_sampling_target": 4096},
    "TEST04": {"requested_performance_issue_same": True},
}
_RESULT_FIELD = {  # compliance/TEST01/verify_performance.py RESULT_FIELD
    "Offline": "result_samples_per_second",
    "SingleStream": "early_stopping_latency_ss",
    "MultiStream": "early_stopping_latency_ms",
    "Server": "result_completed_samples_per_sec",
}
_DTYPES = {"byte": "b", "float32": "f", "int32": "i", "int64": "q"}


def _bench(benchmark: str) -> str:
    b = benchmark.lower()
    return "bert" if b.startswith("bert") else ("resnet50" if b.startswith("resnet") else b)


def tests_for(benchmark: str) -> tuple[str, ...]:
    """The compliance tests the rules ask of ``benchmark`` (miglab's or the checker's name:
    ``resnet50``/``resnet``: TEST01 and TEST04; ``bert-99``: TEST01)."""
    return tuple(test for test in TESTS if _bench(benchmark) in APPLIES[test])


def audit_config(test: str, benchmark: str) -> str:
    """The ``audit.config`` of ``test`` for ``benchmark``; ValueError where the rules have none
    (TEST04 for BERT: exempt)."""
    if test not in TESTS:
        raise ValueError(f"unknown compliance test {test!r} (use {', '.join(TESTS)})")
    text = AUDIT_CONFIGS.get((test, _bench(benchmark)))
    if text is None:
        raise ValueError(f"{test} does not apply to {benchmark} (MLPerf: {test} is for "
                         f"{', '.join(APPLIES[test])})")  # fmt: skip
    return text


def compliance_dir(scenario_dir: str | Path, test: str) -> Path:
    """``<benchmark>/<scenario>/<test>``: the submission checker's folder of the test (v6.x)."""
    if test not in TESTS:
        raise ValueError(f"unknown compliance test {test!r}")
    return Path(scenario_dir) / test


@dataclass
class Verdict:
    """One verification: ``passed`` and the lines the MLCommons script prints (its output file)."""

    passed: bool
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# --- accuracy (TEST01) -------------------------------------------------------------------------
def _first(hexdata: str, code: str):
    raw = bytes.fromhex(hexdata)
    size = {"b": 1, "f": 4, "i": 4, "q": 8}[code]
    if len(raw) < size:
        return None
    import struct

    return struct.unpack_from("<" + code, raw)[0]


def verify_accuracy(reference: list[dict], test: list[dict], dtype: str = "byte") -> Verdict:
    """``verify_accuracy.py`` (JSON mode) over two accuracy logs' entries (``qsl_idx``, ``data``
    hex): ``reference`` from the accuracy run, ``test`` from the TEST01 run."""
    code = _DTYPES[dtype]
    results: dict = {}
    dup = acc_mismatch = match = mismatch = missing = 0
    for s in reference:
        idx, data = s["qsl_idx"], s["data"]
        if idx in results:
            dup += 1
            acc_mismatch += results[idx] != data
        else:
            results[idx] = data
    for s in test:
        idx = s["qsl_idx"]
        if idx in results:
            match += 1
            a, b = _first(s["data"], code), _first(results[idx], code)
            if a is None or b is None:
                mismatch += (a is None) != (b is None)
            elif a != b and not (isinstance(a, float) and math.isnan(a) and math.isnan(b)):
                mismatch += 1
        else:
            missing += 1
        results[idx] = s["data"]
    passed = mismatch == 0 and match > 0
    return Verdict(
        passed,
        [
            "Verifying accuracy. This might take a while...",
            "Reading accuracy mode results...",
            "Reading performance mode results...",
            f"num_acc_log_entries = {len(reference)}",
            f"num_acc_log_duplicate_keys = {dup}",
            f"num_acc_log_data_mismatch = {acc_mismatch}",
            f"num_perf_log_entries = {len(test)}",
            f"num_perf_log_qsl_idx_match = {match}",
            f"num_perf_log_data_mismatch = {mismatch}",
            f"num_missing_qsl_idxs = {missing}",
            "TEST PASS" if passed else "TEST FAIL",
            "",
        ],
    )


def read_accuracy_log(path: str | Path) -> list[dict]:
    """LoadGen's ``mlperf_log_accuracy.json``: a list of ``{"qsl_idx", "data", ...}``;
    ValueError when it is not one."""
    try:
        text = read_input_text(path, limit=ACCURACY_LOG_LIMIT)
    except UnreadableFile as exc:
        raise ValueError(f"{path}: {exc}") from None
    try:
        data = json.loads(text or "[]")
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, list) or not all(
        isinstance(e, dict) and isinstance(e.get("data"), str) and "qsl_idx" in e for e in data
    ):
        raise ValueError(f"{path}: not a LoadGen accuracy log")
    return data


# --- performance (TEST01, TEST04) --------------------------------------------------------------
def _audit_problem(test: str, log: DetailLog) -> str | None:
    for key, want in _AUDIT_KEYS.get(test, {}).items():
        if log.get(key) != want:
            return f"{log.path}: {key} is {log.get(key)!r}, not {want}: audit.config was not read"
    return None


def _score(log: DetailLog, invert_latency: bool):
    scen = log.get("effective_scenario")
    if scen not in _RESULT_FIELD:
        return scen, None
    v = log.get(_RESULT_FIELD[scen])
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
        return scen, None
    if invert_latency and scen in ("SingleStream", "MultiStream"):
        return scen, 1e9 / float(v)
    return scen, float(v)


def _threshold(scen: str, ref_latency_ns: float) -> float:
    if (scen == "SingleStream" and ref_latency_ns <= 200000) or (
        scen == "MultiStream" and ref_latency_ns <= 1600000
    ):
        return 0.20
    return 0.10


def _valid(log: DetailLog) -> bool:
    return log.get("result_validity") == "VALID"


def verify_performance_test01(reference: DetailLog, test: DetailLog) -> Verdict:
    """``compliance/TEST01/verify_performance.py``: the reference performance run's detail log
    against the TEST01 run's."""
    out = ["Verifying performance."]
    for log in (reference, test):
        if not _valid(log):
            return Verdict(False, [*out, f"TEST FAIL: Invalid results in {log.path}"])
        if log.error_count:
            out.append(f"WARNING: {log.error_count} ERROR reported in {log.path}")
    problem = _audit_problem("TEST01", test)
    if problem:
        return Verdict(False, [*out, f"TEST FAIL: {problem}"])
    rs, ref = _score(reference, False)
    ts, tst = _score(test, False)
    if ref is None or tst is None:
        return Verdict(False, [*out, "TEST FAIL: no score in the logs"])
    if rs != ts:
        return Verdict(False, [*out, "TEST FAIL: Test and reference scenarios do not match!"])
    if rs == "Server" and reference.get("effective_target_latency_ns") != test.get(
        "effective_target_latency_ns"
    ):
        return Verdict(False, [*out, "TEST FAIL: Server target latency mismatch"])
    out += [f"Reference score = {ref}", f"Test score = {tst}"]
    t = _threshold(rs, ref)
    passed = ref * (1 - t) <= tst <= ref * (1 + t)
    return Verdict(passed, [*out, "TEST PASS" if passed else "TEST FAIL: Test score invalid"])


def verify_performance_test04(reference: DetailLog, test: DetailLog) -> Verdict:
    """``compliance/TEST04/verify_performance.py``: TEST04 (the same sample over and over) may not
    be faster than the reference performance run by the threshold or more."""
    out = ["Verifying performance."]
    for log, who in ((reference, "Reference"), (test, "Test")):
        if not _valid(log):
            return Verdict(False, [*out, f"TEST FAIL: {who} results are invalid"])
        if log.error_count:
            out.append(f"WARNING: {log.error_count} ERROR reported in {who.lower()} results")
    problem = _audit_problem("TEST04", test)
    if problem:
        return Verdict(False, [*out, f"TEST FAIL: {problem}"])
    rs, ref = _score(reference, True)
    ts, tst = _score(test, True)
    if ref is None or tst is None:
        return Verdict(False, [*out, "TEST FAIL: no score in the logs"])
    if rs == "Server" and reference.get("effective_target_latency_ns") != test.get(
        "effective_target_latency_ns"
    ):
        return Verdict(False, [*out, "TEST FAIL: Server target latency mismatch"])
    if rs != ts:
        return Verdict(False, [*out, "Test and reference scenarios do not match!"])
    out += [f"reference score = {ref}", f"test score = {tst}"]
    lat = 1e9 / ref if rs in ("SingleStream", "MultiStream") else math.inf
    t = _threshold(rs, lat)
    passed = tst < ref * (1 + t)
    return Verdict(passed, [*out, "TEST PASS" if passed else "TEST FAIL: Test score invalid"])


def verify(scenario_dir: str | Path, test: str, accuracy_run: str = "run_1") -> dict[str, Verdict]:
    """Verify ``<scenario_dir>/<test>`` against ``<scenario_dir>/performance/run_1`` (and, TEST01,
    ``accuracy/<accuracy_run>``) as ``run_verification.py`` does: file name -> verdict
    (``verify_performance.txt``, TEST01 also ``verify_accuracy.txt``). Nothing is written."""
    sd = Path(scenario_dir)
    cdir = compliance_dir(sd, test)
    out: dict[str, Verdict] = {}
    perf_ref, perf_test = sd / "performance" / "run_1" / DETAIL_LOG, cdir / "performance" / "run_1"
    try:
        ref_log = read_detail_log(perf_ref)
        test_log = read_detail_log(perf_test / DETAIL_LOG)
    except Exception as exc:  # noqa: BLE001 - a missing/unreadable log is a failed check
        out["verify_performance.txt"] = Verdict(
            False, ["Verifying performance.", f"TEST FAIL: {exc}"]
        )
    else:
        fn = verify_performance_test01 if test == "TEST01" else verify_performance_test04
        out["verify_performance.txt"] = fn(ref_log, test_log)
    if test == "TEST01":
        try:
            ref = read_accuracy_log(sd / "accuracy" / accuracy_run / ACCURACY_LOG)
            got = read_accuracy_log(cdir / "accuracy" / ACCURACY_LOG)
        except ValueError as exc:
            out["verify_accuracy.txt"] = Verdict(False, [f"TEST FAIL: {exc}"])
        else:
            out["verify_accuracy.txt"] = verify_accuracy(ref, got)
    return out
