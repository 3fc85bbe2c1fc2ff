"""Filters miglab.lab.mlperf_*: the mlperf role's decisions, on the controller.

Thin: the role runs ``python -m miglab.mlperf.run`` in the guests and fetches the logs; these
filters build that command line, read the fetched logs with :mod:`miglab.core.runs` and check
them against their manifest with :mod:`miglab.formats.manifest`. They run where Jinja runs, on
the controller, which has the miglab package.
"""

from __future__ import annotations

from pathlib import Path

from ansible.errors import AnsibleFilterError
from ansible_collections.miglab.lab.plugins.plugin_utils.values import plain, require

try:
    from miglab.core import compliance as compliance_lib
    from miglab.core.runs import parse_run
    from miglab.errors import ValidationError
    from miglab.formats.loadgen import has_run_log
    from miglab.formats.manifest import MANIFEST, verify_run
    from miglab.mlperf.guest.clock import local_address_toward
    from miglab.mlperf.results.aggregate import check_round

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a filter is used
    parse_run = verify_run = check_round = has_run_log = local_address_toward = None
    compliance_lib = None
    MANIFEST = "MANIFEST.sha256"
    ValidationError = Exception
    IMPORT_ERROR = exc

# Options of `python -m miglab.mlperf.run` the role may set: key -> flag. A value of None or ""
# leaves the flag out; True adds a bare flag; False leaves it out.
RUN_OPTIONS = {
    "backend": "--backend",
    "sut": "--sut",
    "benchmark": "--benchmark",
    "scenario": "--scenario",
    "mode": "--mode",
    "out": "--out",
    "run": "--run",
    "model": "--model",
    "weights": "--weights",
    "device": "--device",
    "mlperf_conf": "--mlperf-conf",
    "user_conf": "--user-conf",
    "min_duration_ms": "--min-duration-ms",
    "target_qps": "--target-qps",
    "raw_seconds": "--raw-seconds",
    "warmup_seconds": "--warmup-seconds",
    "threads": "--threads",
    "start_at": "--start-at",
    "barrier_dir": "--barrier-dir",
    "barrier_timeout": "--barrier-timeout",
    "pack": "--pack",
    "vm": "--vm",
    "lab_scenario": "--lab-scenario",
    "profile": "--profile",
    "vgpu_type": "--vgpu-type",
    "placement": "--placement",
    "notes": "--notes",
    "simulated": "--simulated-lab",
    "overwrite": "--overwrite",
    "clock": "--clock",
    "clock_server": "--clock-server",
    "clock_port": "--clock-port",
    "clock_samples": "--clock-samples",
    "clock_timeout": "--clock-timeout",
    "clock_controller": "--clock-controller",
    "compliance": "--compliance",
    "qps_search": "--qps-search",
    "search_min_duration_ms": "--search-min-duration-ms",
    "search_min_query_count": "--search-min-query-count",
    "search_tolerance": "--search-tolerance",
    "search_max_trials": "--search-max-trials",
    # --backend nvidia: NVIDIA's harness (miglab.mlperf.guest.backends.nvidia)
    "harness_dir": "--harness-dir",
    "harness_round": "--harness-round",
    "harness_launch": "--harness-launch",
    "harness_steps": "--harness-steps",
    "harness_make_var": "--harness-make-var",  # a list: the flag once per NAME=VALUE
    "harness_run_args": "--harness-run-args",
    "harness_timeout": "--harness-timeout",
    "gpu": "--gpu",
    "vgpu_count": "--vgpu-count",
    "system_prefix": "--system-prefix",
}
# The reference backend's SUT options: the nvidia backend runs NVIDIA's SUT, so a role's
# settings for miglab's SUTs (the simulated lab's slice model, its device) are left out there.
REFERENCE_ONLY = (
    "sut",
    "model",
    "weights",
    "device",
    "mlperf_conf",
    "user_conf",
    "raw_seconds",
    "warmup_seconds",
    "threads",
)
# Search settings (the campaign's mlperf.qps_search, the role's mlperf_qps_search_options) ->
# the options above.
SEARCH_OPTIONS = {
    "min_duration_ms": "search_min_duration_ms",
    "min_query_count": "search_min_query_count",
    "tolerance": "search_tolerance",
    "max_trials": "search_max_trials",
}
# Kinds of round besides the performance runs (an item without ``kind`` is one).
KINDS = ("search", "accuracy", "performance", "compliance")
SEARCH_FILE = "qps_search.json"
SEARCH_DIR = "qps_search"  # <results>/<campaign>/qps_search/<profile>/<benchmark>/<Scenario>/
REQUIRED = ("benchmark", "scenario", "out", "run")  # and sut, but for --backend nvidia


def _lib():
    return require(parse_run, "mlperf", IMPORT_ERROR)


_plain = plain


def mlperf_run_args(options, extra_args=None):
    """Options (dict, keys of RUN_OPTIONS) -> the argv tail of ``python -m miglab.mlperf.run``."""
    opts = _plain(options or {})
    if not isinstance(opts, dict):
        raise AnsibleFilterError("mlperf_run_args: options must be a dict")
    unknown = sorted(set(opts) - set(RUN_OPTIONS))
    if unknown:
        raise AnsibleFilterError(f"mlperf_run_args: unknown options: {', '.join(unknown)}")
    nvidia = opts.get("backend") == "nvidia"
    if nvidia:
        opts = {k: v for k, v in opts.items() if k not in REFERENCE_ONLY}
    missing = [k for k in (*REQUIRED, *(() if nvidia else ("sut",))) if opts.get(k) in (None, "")]
    if missing:
        raise AnsibleFilterError(f"mlperf_run_args: missing options: {', '.join(missing)}")
    argv: list[str] = []
    for key, flag in RUN_OPTIONS.items():
        value = opts.get(key)
        if value is None or value == "" or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    extra = _plain(extra_args or [])
    if isinstance(extra, str) or not isinstance(extra, list):
        raise AnsibleFilterError("mlperf_run_args: extra_args must be a list of strings")
    return argv + [str(a) for a in extra]


def mlperf_run_status(run_dir):
    """A controller-side run folder -> {exists, valid, metric, value, validity, reasons, line}.

    ``exists`` is false when the folder holds no LoadGen log; unreadable logs count as not valid
    (their problem is in ``reasons``).
    """
    run_dir = Path(str(run_dir))
    status = {
        "path": str(run_dir),
        "exists": False,
        "valid": False,
        "metric": None,
        "value": None,
        "validity": None,
        "reasons": [],
        "line": "",
    }
    if not require(has_run_log, "mlperf", IMPORT_ERROR)(run_dir):
        status["reasons"] = ["no LoadGen log"]
        status["line"] = f"NO RESULT: no LoadGen log in {run_dir}"
        return status
    status["exists"] = True
    try:
        rec = _lib()(run_dir)
    except ValidationError as exc:
        status["reasons"] = [str(exc)]
        status["line"] = f"UNREADABLE {run_dir}: {exc}"
        return status
    status.update(
        valid=bool(rec.valid),
        metric=rec.metric,
        value=rec.value,
        validity=rec.loadgen_validity,
        reasons=list(rec.invalid_reasons),
    )
    word = "VALID" if rec.valid else "INVALID"
    value = "-" if rec.value is None else rec.value
    line = f"{word} {rec.benchmark} {rec.scenario}: {rec.metric} = {value}"
    if not rec.valid and rec.invalid_reasons:
        line += f" (not valid: {'; '.join(rec.invalid_reasons)})"
    status["line"] = line
    return status


def mlperf_run_valid(run_dir):
    """True when the run folder holds LoadGen logs that say VALID."""
    return mlperf_run_status(run_dir)["valid"]


def mlperf_matrix(benchmarks, scenarios, runs, qps_search=False, accuracy=False, compliance=None):
    """benchmarks x MLPerf scenarios x runs 1..N -> [{benchmark, scenario, run}] in run order.

    Runs are the outer loop: run 1 of every benchmark and scenario, then run 2, ... (a campaign
    stopped half way has comparable data for every combination). With ``qps_search``, a search
    round (``kind: search``: Server's target-QPS search, Offline's calibration) per benchmark
    and scenario comes first; with ``accuracy``, an AccuracyOnly round (``kind: accuracy``,
    ``accuracy/run_1``) per benchmark and scenario before the performance runs; ``compliance``
    (TEST01, TEST04) adds a round (``kind: compliance``, ``test``) per test, benchmark and
    scenario after them, for the benchmarks the test applies to (TEST04 is not for BERT).
    """
    b = _plain(benchmarks or [])
    s = _plain(scenarios or [])
    if isinstance(b, str):
        b = [b]
    if isinstance(s, str):
        s = [s]
    try:
        n = int(runs)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"mlperf_matrix: runs must be an integer, not {runs!r}") from exc
    if n < 0:
        raise AnsibleFilterError("mlperf_matrix: runs must be >= 0")
    tests = _plain(compliance or [])
    if isinstance(tests, str):
        tests = [tests]
    each = [(str(bm), str(sc)) for bm in b for sc in s]
    out = []
    if _flag(qps_search):
        out += [{"kind": "search", "benchmark": bm, "scenario": sc, "run": 1} for bm, sc in each]
    if _flag(accuracy):
        out += [{"kind": "accuracy", "benchmark": bm, "scenario": sc, "run": 1} for bm, sc in each]
    out += [
        {"benchmark": str(bm), "scenario": str(sc), "run": r}
        for r in range(1, n + 1)
        for bm in b
        for sc in s
    ]
    if tests and n < 1:
        raise AnsibleFilterError("mlperf_matrix: compliance tests need performance run_1")
    for test in tests:
        lib = require(compliance_lib, "mlperf", IMPORT_ERROR)
        if test not in lib.TESTS:
            raise AnsibleFilterError(
                f"mlperf_matrix: unknown compliance test {test!r} (known: {', '.join(lib.TESTS)})"
            )
        for bm, sc in each:
            if mlperf_compliance_applies(test, bm):
                out.append(
                    {"kind": "compliance", "test": test, "benchmark": bm, "scenario": sc, "run": 1}
                )
    return out


def _flag(value) -> bool:
    value = _plain(value)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)


def mlperf_compliance_applies(test, benchmark):
    """Whether MLPerf compliance test ``test`` applies to ``benchmark`` (TEST01: ResNet50 and
    BERT; TEST04: ResNet50 only -- :data:`miglab.core.compliance.APPLIES`)."""
    lib = require(compliance_lib, "mlperf", IMPORT_ERROR)
    try:
        lib.audit_config(str(test), str(benchmark))
    except ValueError:
        return False
    return True


def mlperf_round_dir(item, mode=None):
    """Where a round of the matrix is filed under its VM's folder of the results tree:
    ``<benchmark>/<Scenario>/performance/run_<n>`` (``accuracy/run_<n>`` for an AccuracyOnly
    round -- ``kind: accuracy``, or every run when ``mode`` is AccuracyOnly),
    ``<benchmark>/<Scenario>/TEST0x/performance/run_1`` for a compliance round (the submission
    checker's layout), ``<benchmark>/<Scenario>/qps_search.json`` for a search round."""
    i = _plain(item or {})
    if not isinstance(i, dict) or not all(k in i for k in ("benchmark", "scenario")):
        raise AnsibleFilterError("mlperf_round_dir: an item of mlperf_matrix is needed")
    kind = i.get("kind", "performance")
    base = f"{i['benchmark']}/{i['scenario']}"
    if kind == "search":
        return f"{base}/{SEARCH_FILE}"
    if kind == "compliance":
        return f"{base}/{i['test']}/performance/run_1"
    if kind == "accuracy" or str(mode or "") == "AccuracyOnly":
        return f"{base}/accuracy/run_{i.get('run', 1)}"
    return f"{base}/performance/run_{i.get('run', 1)}"


def mlperf_profile_key(profile, vm=""):
    """The folder a profile's searched targets are kept in (``qps_search/<key>``): the MIG
    profile (e.g. ``2g.20gb``), else the VM's name; characters other than letters, digits, '.',
    '_' and '-' become '_'."""
    import re

    key = re.sub(r"[^A-Za-z0-9._-]", "_", str(profile or vm or ""))
    if key.strip(".") == "":
        raise AnsibleFilterError("mlperf_profile_key: neither a profile nor a VM name")
    return key


def mlperf_search_target(path):
    """The target QPS a ``qps_search.json`` on the controller holds (a number > 0), else None."""
    import json

    p = Path(str(path))
    try:
        if not p.is_file() or p.is_symlink() or p.stat().st_size > 1024 * 1024:
            return None
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    qps = data.get("target_qps") if isinstance(data, dict) else None
    if isinstance(qps, bool) or not isinstance(qps, (int, float)) or not 0 < qps < float("inf"):
        return None
    return float(qps)


def mlperf_searched_targets(matrix, search_dir):
    """The search rounds of a matrix whose target the profile's folder ``search_dir`` on the
    controller holds: ``[{benchmark, scenario, dir, path, target_qps}]`` (``dir``: the file's
    path under a VM's folder, ``path``: the controller's file)."""
    out = []
    for i in _plain(matrix or []):
        if i.get("kind") != "search" or not search_dir:
            continue
        tail = mlperf_round_dir(i)
        path = Path(str(search_dir)) / tail
        qps = mlperf_search_target(path)
        if qps is not None:
            out.append({"benchmark": i["benchmark"], "scenario": i["scenario"], "dir": tail,
                        "path": str(path), "target_qps": qps})  # fmt: skip
    return out


def mlperf_compliance_checks(matrix, vm_dir):
    """``mlperf_compliance_verify`` for every compliance round of a matrix whose run is in the
    VM's controller folder ``vm_dir``, each with ``dir`` (the test's folder, where its
    ``verify_*.txt`` go)."""
    out = []
    for i in _plain(matrix or []):
        if i.get("kind") != "compliance":
            continue
        scenario_dir = Path(str(vm_dir)) / str(i["benchmark"]) / str(i["scenario"])
        res = mlperf_compliance_verify(scenario_dir, i["test"])
        if res["exists"]:
            out.append({**res, "dir": str(scenario_dir / str(i["test"]))})
    return out


def _accuracy_complete(run_dir: Path) -> str | None:
    """None when ``run_dir`` holds a complete AccuracyOnly run (its ``miglab_run.json`` says
    every sample was logged), else why not."""
    import json

    if not require(has_run_log, "mlperf", IMPORT_ERROR)(run_dir):
        return "no LoadGen log"
    meta = run_dir / "miglab_run.json"
    try:
        if meta.is_symlink() or meta.stat().st_size > 1024 * 1024:
            return "miglab_run.json is not a small regular file"
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"miglab_run.json unreadable: {exc}"
    res = data.get("loadgen") if isinstance(data, dict) else None
    if not isinstance(res, dict) or res.get("valid") is not True:
        return "accuracy run not complete"
    return None


def mlperf_session_rounds(
    matrix,
    options,
    barrier_prefix,
    models=None,
    extra_args=None,
    peer_vm_dirs=None,
    redo=None,
    searcher=True,
    search_dir=None,
    search_options=None,
    accuracy_args=None,
    vm_dir=None,
):
    """A wave's rounds for one guest's session (``python -m miglab.mlperf.guest.session``).

    ``matrix``: the run matrix (``mlperf_matrix``); ``options``: the run options every round
    shares (``mlperf_run_args``' keys but benchmark, scenario, run, barrier_dir and pack);
    ``models``: benchmark -> model (else ``options.model``); ``barrier_prefix``: the guest path
    each round's barrier folder starts with (``<prefix>-<index>``). ``peer_vm_dirs`` (resume):
    the controller's folders of every VM of this campaign scenario; a round the report would
    sum already (VALID in all of them, and they ran at once: ``mlperf_round_checks``) is skipped.
    ``redo`` (with ``peer_vm_dirs``): only rounds in these states are run (e.g.
    ``['not concurrent']`` for a second pass). Returns one entry per matrix item, in its order:
    None for a skipped round, else ``{index, kind, dir, barrier_dir, tarball, argv}`` (``dir``:
    ``mlperf_round_dir``; a search round has no tarball).

    Search rounds run in the guest only when ``searcher`` (the first VM of its profile in the
    wave) and the profile's folder ``search_dir`` on the controller holds no target yet
    (``<dir>/<benchmark>/<Scenario>/qps_search.json``), whatever the resume setting: a profile
    is searched once per campaign. ``search_options``: the short runs' settings
    (``min_duration_ms``, ``min_query_count``, ``tolerance``, ``max_trials``). Accuracy rounds
    run AccuracyOnly with ``accuracy_args[benchmark]`` appended (dataset paths ...); on resume
    a VM redoes only its own (``vm_dir``) incomplete ones. Compliance rounds run the test
    (``--compliance``) in every VM of the scenario at once, like the performance runs they
    are verified against.
    """
    items = _plain(matrix or [])
    opts = _plain(options or {})
    if not isinstance(opts, dict):
        raise AnsibleFilterError("mlperf_session_rounds: options must be a dict")
    own = sorted({"benchmark", "scenario", "run", "barrier_dir", "pack"} & set(opts))
    if own:
        raise AnsibleFilterError(f"mlperf_session_rounds: options set per round: {', '.join(own)}")
    by_model = _plain(models or {})
    search = _plain(search_options or {})
    if not isinstance(search, dict) or set(search) - set(SEARCH_OPTIONS):
        raise AnsibleFilterError(
            "mlperf_session_rounds: search_options must be a dict of " + ", ".join(SEARCH_OPTIONS)
        )
    acc_args = _plain(accuracy_args or {})
    if not isinstance(acc_args, dict) or not all(isinstance(v, list) for v in acc_args.values()):
        raise AnsibleFilterError(
            "mlperf_session_rounds: accuracy_args must map benchmarks to lists of arguments"
        )
    checks = None
    if peer_vm_dirs is not None:
        wanted = set(_plain(redo)) if redo else None
        checks = [
            c["state"] != "complete" and (wanted is None or c["state"] in wanted)
            for c in mlperf_round_checks(
                items, peer_vm_dirs, mode=opts.get("mode"), vm_dir=vm_dir, search_dir=search_dir
            )
        ]
    rounds = []
    for index, item in enumerate(items):
        bm, sc, run = str(item["benchmark"]), str(item["scenario"]), item["run"]
        kind = item.get("kind", "performance")
        if kind not in KINDS:
            raise AnsibleFilterError(f"mlperf_session_rounds: unknown kind of round {kind!r}")
        if kind == "search":
            done = search_dir and mlperf_search_target(
                Path(str(search_dir)) / bm / sc / SEARCH_FILE
            )
            skip = not _flag(searcher) or bool(done) or bool(redo)
        else:
            skip = checks is not None and not checks[index]
        if skip:
            rounds.append(None)
            continue
        folder = f"{barrier_prefix}-{index}"
        args = {
            **opts,
            "benchmark": bm,
            "scenario": sc,
            "run": run,
            "model": by_model.get(bm, opts.get("model")),
            "barrier_dir": folder,
            "pack": f"{folder}/run.tar.gz",
        }
        extra = list(_plain(extra_args or []))
        if kind == "search":
            args.update(qps_search=True, mode="PerformanceOnly", pack=None)
            args.update({SEARCH_OPTIONS[k]: v for k, v in search.items()})
        elif kind == "accuracy":
            args["mode"] = "AccuracyOnly"
            extra += [str(a) for a in acc_args.get(bm, [])]
        elif kind == "compliance":
            args.update(compliance=item["test"], mode="PerformanceOnly")
        rounds.append(
            {
                "index": index,
                "kind": kind,
                "dir": mlperf_round_dir(item, args.get("mode")),
                "barrier_dir": folder,
                "tarball": args["pack"],
                "argv": mlperf_run_args(args, extra),
            }
        )
    return rounds


def mlperf_known_ready(release_result, barrier_dir):
    """True when the previous round's release answer (the registered result of
    ``miglab.mlperf.guest.barrier release --next``) said that round ``barrier_dir`` is ready
    already: the controller need not ask the guest again (phase 1 of its barrier is met)."""
    import json

    result = _plain(release_result or {})
    if not isinstance(result, dict) or result.get("rc") != 0 or not barrier_dir:
        return False
    lines = str(result.get("stdout") or "").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        return False
    return (
        isinstance(answer, dict)
        and answer.get("next") == "ready"
        and answer.get("next_dir") == str(barrier_dir)
    )


def mlperf_round_checks(matrix, peer_vm_dirs, mode=None, vm_dir=None, search_dir=None):
    """Each item of a run matrix (``mlperf_matrix``) with the state of its round across the
    controller's folders of every VM of one campaign scenario (``peer_vm_dirs``:
    ``<results>/<campaign>/<scenario>/<vm>``), by the report's rule
    (:func:`miglab.mlperf.results.aggregate.check_round`): the item plus ``state``
    (complete, missing, not concurrent, invalid) and ``reasons``.

    The other kinds of round: a search round is complete when the profile's folder
    ``search_dir`` holds its target (missing without ``search_dir``); an accuracy round when
    the run in ``vm_dir`` (else every peer) logged every sample; a compliance round when every
    peer has the test's run (its verdict is the controller's, made after the fetch)."""
    items = _plain(matrix or [])
    peers = _plain(peer_vm_dirs or [])
    if isinstance(peers, str):
        peers = [peers]
    check = require(check_round, "mlperf", IMPORT_ERROR)
    out = []
    for i in items:
        kind = i.get("kind", "performance")
        tail = mlperf_round_dir(i, mode)
        if kind == "search":
            path = Path(str(search_dir)) / tail if search_dir else None
            found = path is not None and mlperf_search_target(path) is not None
            state = "complete" if found else "missing"
            reasons = [] if found else [f"no target QPS in {path or 'the profile folder'}"]
        elif kind == "compliance":
            reasons = [
                f"{Path(str(d)).name}: no {i['test']} run"
                for d in peers
                if not require(has_run_log, "mlperf", IMPORT_ERROR)(Path(str(d)) / tail)
            ]
            state = "missing" if reasons else "complete"
        elif kind == "accuracy" or "/accuracy/" in tail:
            dirs = [vm_dir] if vm_dir else peers
            reasons = [
                f"{Path(str(d)).name}: {why}"
                for d in dirs
                if (why := _accuracy_complete(Path(str(d)) / tail))
            ]
            state = "missing" if reasons else "complete"
        else:
            res = check({Path(str(d)).name: Path(str(d)) / tail for d in peers})
            state, reasons = res.state, list(res.reasons)
        out.append({**i, "state": state, "reasons": reasons})
    return out


def mlperf_incomplete_rounds(matrix, peer_vm_dirs, mode=None, vm_dir=None, search_dir=None):
    """The items of a run matrix whose round the report would not sum yet (see
    ``mlperf_round_checks``): what resuming the campaign scenario must redo, in all its VMs."""
    return [
        c
        for c in mlperf_round_checks(
            matrix, peer_vm_dirs, mode=mode, vm_dir=vm_dir, search_dir=search_dir
        )
        if c["state"] != "complete"
    ]


def mlperf_compliance_verify(scenario_dir, test):
    """Verify a compliance run on the controller, against the run it is compared with there:
    ``<scenario_dir>/<test>`` against ``<scenario_dir>/performance/run_1`` (and, TEST01,
    ``accuracy/run_1``), as MLCommons' ``run_verification.py`` does
    (:func:`miglab.core.compliance.verify`; nothing is written here) -> ``{test, exists,
    passed, files: [{name, text, passed}], line}``; ``exists`` is false when the test's run is
    not there (nothing to verify)."""
    lib = require(compliance_lib, "mlperf", IMPORT_ERROR)
    sd = Path(str(scenario_dir))
    test = str(test)
    run = lib.compliance_dir(sd, test) / "performance" / "run_1"
    if not require(has_run_log, "mlperf", IMPORT_ERROR)(run):
        return {"test": test, "exists": False, "passed": False, "files": [],
                "line": f"{test}: no run in {run}"}  # fmt: skip
    files, said = [], []
    for name, verdict in sorted(lib.verify(sd, test).items()):
        files.append({"name": name, "text": verdict.text, "passed": bool(verdict.passed)})
        last = next((x for x in reversed(verdict.lines) if x.strip()), "")
        said.append(f"{name.removesuffix('.txt')}: {last}")
    passed = bool(files) and all(f["passed"] for f in files)
    line = f"{test} {sd.parent.name} {sd.name}: {'PASS' if passed else 'FAIL'} ({'; '.join(said)})"
    return {"test": test, "exists": True, "passed": passed, "files": files, "line": line}


def mlperf_clock_server(host, configured=""):
    """The address a guest queries the controller's clock responder at: ``configured``
    (``mlperf_clock_server``) when set; else the controller's own address on its route to the
    guest at ``host`` (``ansible_host``) when that is an IP address; else "" -- the guest then
    takes the address its SSH connection comes from, or its default gateway (the simulated lab,
    whose guests Ansible reaches by container name)."""
    if configured:
        return str(configured)
    return require(local_address_toward, "mlperf", IMPORT_ERROR)(str(host or ""))


def mlperf_clock_options(
    method, server="", port=None, samples=None, timeout=None, host="", controller=None
):
    """The clock options every round of a guest's session gets (``mlperf_session_rounds``'
    options): ``--clock METHOD`` and what the method needs. ``responder``: the address the guest
    queries (``mlperf_clock_server``) and the port. ``ntp``, ``chrony``: the controller's own
    measurement (``controller``: the registered result of ``python -m miglab.mlperf.guest.clock
    measure`` on the controller) -- when it gave no answer, an error reading saying so, so that
    the guests record why their clocks were not checked."""
    import json

    method = str(method or "off")
    if method == "off":
        return {"clock": "off"}
    opts = {"clock": method, "clock_samples": samples, "clock_timeout": timeout}
    if method == "responder":
        opts.update(clock_server=mlperf_clock_server(host, server) or None, clock_port=port)
        return opts
    if method == "ntp":
        opts["clock_server"] = server or None
    result = _plain(controller or {})
    lines = str(result.get("stdout") or "").strip().splitlines() if isinstance(result, dict) else []
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        said = str(result.get("stderr") or result.get("msg") or "").strip().splitlines()
        why = said[-1][:200] if said else "no output"
        answer = {"method": method, "error": f"the controller measured nothing: {why}"}
    opts["clock_controller"] = json.dumps(answer)
    return opts


def mlperf_verify_run(run_dir):
    """A run folder on the controller (the fetch unpacks it into a staging folder first) against
    its ``MANIFEST.sha256`` -> {path, manifest, ok, problems, line}.

    ``manifest`` is false when the folder has none (a guest with an older miglab: the role writes
    one on the controller); ``problems`` lists everything else wrong (a file that differs from its
    checksum, missing, not listed; a leftover temporary file), one ``PATH: what`` line each;
    ``ok`` is true when there is a manifest and no problem.
    """
    issues = require(verify_run, "mlperf", IMPORT_ERROR)(Path(str(run_dir)))
    has_manifest = not any(i.kind == "no-manifest" for i in issues)
    problems = [str(i) for i in issues if i.kind != "no-manifest"]
    if problems:
        line = f"{len(problems)} problem(s) in {run_dir}: " + "; ".join(problems)
    elif not has_manifest:
        line = f"no {MANIFEST} in {run_dir}"
    else:
        line = f"{run_dir} matches its {MANIFEST}"
    return {
        "path": str(run_dir),
        "manifest": has_manifest,
        "ok": has_manifest and not problems,
        "problems": problems,
        "line": line,
    }


class FilterModule:
    def filters(self):
        return {
            "mlperf_run_args": mlperf_run_args,
            "mlperf_run_status": mlperf_run_status,
            "mlperf_run_valid": mlperf_run_valid,
            "mlperf_matrix": mlperf_matrix,
            "mlperf_round_checks": mlperf_round_checks,
            "mlperf_incomplete_rounds": mlperf_incomplete_rounds,
            "mlperf_session_rounds": mlperf_session_rounds,
            "mlperf_known_ready": mlperf_known_ready,
            "mlperf_verify_run": mlperf_verify_run,
            "mlperf_clock_server": mlperf_clock_server,
            "mlperf_clock_options": mlperf_clock_options,
            "mlperf_round_dir": mlperf_round_dir,
            "mlperf_profile_key": mlperf_profile_key,
            "mlperf_search_target": mlperf_search_target,
            "mlperf_compliance_applies": mlperf_compliance_applies,
            "mlperf_compliance_verify": mlperf_compliance_verify,
            "mlperf_compliance_checks": mlperf_compliance_checks,
            "mlperf_searched_targets": mlperf_searched_targets,
        }
