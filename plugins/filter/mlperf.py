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
    from miglab.core.runs import parse_run
    from miglab.errors import ValidationError
    from miglab.formats.loadgen import has_run_log
    from miglab.formats.manifest import MANIFEST, verify_run
    from miglab.mlperf.guest.clock import local_address_toward
    from miglab.mlperf.results.aggregate import check_round

    IMPORT_ERROR = None
except ImportError as exc:  # reported when a filter is used
    parse_run = verify_run = check_round = has_run_log = local_address_toward = None
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
}
REQUIRED = ("sut", "benchmark", "scenario", "out", "run")


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
    missing = [k for k in REQUIRED if opts.get(k) in (None, "")]
    if missing:
        raise AnsibleFilterError(f"mlperf_run_args: missing options: {', '.join(missing)}")
    argv: list[str] = []
    for key, flag in RUN_OPTIONS.items():
        value = opts.get(key)
        if value is None or value == "" or value is False:
            continue
        if value is True:
            argv.append(flag)
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


def mlperf_matrix(benchmarks, scenarios, runs):
    """benchmarks x MLPerf scenarios x runs 1..N -> [{benchmark, scenario, run}] in run order.

    Runs are the outer loop: run 1 of every benchmark and scenario, then run 2, ... (a campaign
    stopped half way has comparable data for every combination).
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
    return [
        {"benchmark": str(bm), "scenario": str(sc), "run": r}
        for r in range(1, n + 1)
        for bm in b
        for sc in s
    ]


def mlperf_session_rounds(
    matrix, options, barrier_prefix, models=None, extra_args=None, peer_vm_dirs=None, redo=None
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
    None for a skipped round, else ``{index, barrier_dir, tarball, argv}``.
    """
    items = _plain(matrix or [])
    opts = _plain(options or {})
    if not isinstance(opts, dict):
        raise AnsibleFilterError("mlperf_session_rounds: options must be a dict")
    own = sorted({"benchmark", "scenario", "run", "barrier_dir", "pack"} & set(opts))
    if own:
        raise AnsibleFilterError(f"mlperf_session_rounds: options set per round: {', '.join(own)}")
    by_model = _plain(models or {})
    checks = None
    if peer_vm_dirs is not None:
        wanted = set(_plain(redo)) if redo else None
        checks = [
            c["state"] != "complete" and (wanted is None or c["state"] in wanted)
            for c in mlperf_round_checks(items, peer_vm_dirs)
        ]
    rounds = []
    for index, item in enumerate(items):
        bm, sc, run = str(item["benchmark"]), str(item["scenario"]), item["run"]
        if checks is not None and not checks[index]:
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
        rounds.append(
            {
                "index": index,
                "barrier_dir": folder,
                "tarball": f"{folder}/run.tar.gz",
                "argv": mlperf_run_args(args, extra_args),
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


def mlperf_round_checks(matrix, peer_vm_dirs):
    """Each item of a run matrix (``mlperf_matrix``) with the state of its round across the
    controller's folders of every VM of one campaign scenario (``peer_vm_dirs``:
    ``<results>/<campaign>/<scenario>/<vm>``), by the report's rule
    (:func:`miglab.mlperf.results.aggregate.check_round`): the item plus ``state``
    (complete, missing, not concurrent, invalid) and ``reasons``."""
    items = _plain(matrix or [])
    peers = _plain(peer_vm_dirs or [])
    if isinstance(peers, str):
        peers = [peers]
    check = require(check_round, "mlperf", IMPORT_ERROR)
    out = []
    for i in items:
        tail = Path(str(i["benchmark"])) / str(i["scenario"]) / "performance" / f"run_{i['run']}"
        res = check({Path(str(d)).name: Path(str(d)) / tail for d in peers})
        out.append({**i, "state": res.state, "reasons": list(res.reasons)})
    return out


def mlperf_incomplete_rounds(matrix, peer_vm_dirs):
    """The items of a run matrix whose round the report would not sum yet (see
    ``mlperf_round_checks``): what resuming the campaign scenario must redo, in all its VMs."""
    return [c for c in mlperf_round_checks(matrix, peer_vm_dirs) if c["state"] != "complete"]


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
        }
