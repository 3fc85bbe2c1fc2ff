"""Hostile results trees (issue 14, the results side): the real ``miglab results parse|aggregate|
verify`` and ``miglab report`` never hang, never run out of memory, never stop over one bad run,
never drop a result without a word and never certify one wrongly.

Every tree is built in tmp_path from the real published LoadGen logs of tests/fixtures/mlperf
(Dell's MLPerf v1.1 R750xa MIG ResNet50 Offline and Server runs, NVIDIA's v4.1 H200 Server run),
then mutated at test time: FIFOs, symbolic links to /dev/zero, sparse multi-GiB files, deeply
nested JSON lines, non-finite or out-of-range numbers, odd run folder names, symbolic links out
of the tree, manifests that list a file twice, summaries that contradict their detail log. The
base tree is ``camp/s1/vm1`` and ``camp/s6/{vm1,vm2}``, two runs each, every run the real
Offline detail log (136656 samples/s), so s6's run total is 273312.

Each case (an integration test: a hundred real CLI runs, beside the unit tests in CI) runs the
command in a subprocess with a deadline (a hang fails the test instead of blocking the suite)
and an address-space limit (a runaway read fails with MemoryError instead of taking the
machine), and checks what a user sees: the documented exit code (0 done, 1 ran and
failed, 2 bad input), no ``Traceback``, no ``internal error``, bounded output, JSON that is JSON
(a bare ``NaN`` fails), and the reason in the output.

``MIGLAB_HOSTILE_CODE=DIR`` runs the ``miglab`` of another checkout (e.g. ``git archive HEAD``
unpacked in /tmp) to see these cases fail on it; ``MIGLAB_HOSTILE_TIMEOUT`` sets the deadline.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from miglab.formats.manifest import sha256_file, write_manifest
from testlib import FIXTURES, ROOT, edit_mllog

CODE = Path(os.environ.get("MIGLAB_HOSTILE_CODE", ROOT))
TIMEOUT = float(os.environ.get("MIGLAB_HOSTILE_TIMEOUT", "90"))
MEMORY = 3 << 30  # address space of one command: far above what a report of these trees needs
OUTPUT_MAX = 2 << 20  # bytes of stdout + stderr

DELL = FIXTURES / "mlperf/inference_results_v1.1/closed/Dell/results"
MIG28 = DELL / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50"
OFFLINE = MIG28 / "Offline/performance/run_1"
SERVER = MIG28 / "Server/performance/run_1"
H200 = (
    FIXTURES
    / "mlperf/inference_results_v4.1/closed/NVIDIA/results/H200-SXM-141GBx8_TRT/resnet50/Server"
    / "performance/run_1"
)
DETAIL, SUMMARY, META, MANIFEST = (
    "mlperf_log_detail.txt",
    "mlperf_log_summary.txt",
    "miglab_run.json",
    "MANIFEST.sha256",
)
TOTAL = 2 * 136656  # s6's run total: two VMs of the real Offline run
GiB = 1 << 30


# --- running the real command ---------------------------------------------------------------------
@dataclass
class Result:
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def json(self):
        """stdout as strict JSON: a bare NaN or Infinity fails the test."""

        def bare(constant):
            raise AssertionError(f"bare {constant} in JSON output: {self.out[:300]}")

        return json.loads(self.out, parse_constant=bare)


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def miglab(*args, rc: int | None = None) -> Result:
    """Run ``python -m miglab.cli ARGS``; fail on a hang, a traceback, an internal error, more
    than OUTPUT_MAX bytes of output, or an exit code other than ``rc``."""
    env = {k: v for k, v in os.environ.items() if k != "MIGLAB_DEBUG"}
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "miglab.cli", *map(str, args)]
    try:
        p = subprocess.run(
            cmd,
            cwd=CODE,
            env=env,
            capture_output=True,
            timeout=TIMEOUT,
            preexec_fn=_limits,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: miglab {' '.join(map(str, args))} ran past {TIMEOUT:g} s")
    res = Result(
        p.returncode,
        p.stdout.decode("utf-8", "replace"),
        p.stderr.decode("utf-8", "replace"),
    )
    shown = res.text[-3000:]
    assert len(p.stdout) + len(p.stderr) <= OUTPUT_MAX, f"{len(p.stdout)} bytes of output"
    assert "Traceback" not in res.text, shown
    assert "internal error" not in res.text, shown
    if rc is not None:
        assert res.rc == rc, f"exit {res.rc}, not {rc}:\n{shown}"
    return res


# --- trees from the real logs --------------------------------------------------------------------
def run_dir(root: Path, scen: str, vm: str, n, bench="resnet50", mlscen="Offline") -> Path:
    name = n if isinstance(n, str) else f"run_{n}"
    return root / scen / vm / bench / mlscen / "performance" / name


def make_tree(tmp_path: Path, summary: bool = False, src: Path = OFFLINE, mlscen="Offline"):
    root = tmp_path / "results" / "camp"
    for scen, vms in {"s1": ["vm1"], "s6": ["vm1", "vm2"]}.items():
        for vm in vms:
            for n in (1, 2):
                d = run_dir(root, scen, vm, n, mlscen=mlscen)
                d.mkdir(parents=True)
                shutil.copy(src / DETAIL, d / DETAIL)
                if summary and (src / SUMMARY).is_file():
                    shutil.copy(src / SUMMARY, d / SUMMARY)
    return root


@pytest.fixture
def root(tmp_path):
    return make_tree(tmp_path)


def bad_run(root: Path, mlscen="Offline") -> Path:
    """The run every case spoils: s6's vm2, run 1."""
    return run_dir(root, "s6", "vm2", 1, mlscen=mlscen)


def edit(path: Path, **values) -> None:
    path.write_text(edit_mllog(path.read_text(), values))


def set_raw(path: Path, key: str, literal: str) -> None:
    """Put ``literal`` (JSON text, or not) as the value of the first line of ``key``."""
    out, done = [], False
    for line in path.read_text().splitlines(keepends=True):
        if not done and f'"key": "{key}"' in line:
            rec = json.loads(line[len(":::MLLOG ") :])
            rec["value"] = "@@"
            line = ":::MLLOG " + json.dumps(rec).replace('"@@"', literal) + "\n"
            done = True
        out.append(line)
    assert done, key
    path.write_text("".join(out))


def sparse(path: Path, size: int) -> Path:
    with path.open("wb") as f:
        f.truncate(size)
    return path


def group(data: dict, scen: str, mlscen="Offline") -> dict:
    (g,) = [g for g in data["groups"] if g["scenario"] == scen and g["mlperf_scenario"] == mlscen]
    return g


def run_of(g: dict, n: int) -> dict:
    (r,) = [r for r in g["runs"] if r["run"] == n]
    return r


def aggregate(root: Path, *args) -> dict:
    return miglab("results", "aggregate", root, "--json", *args, rc=0).json()


def assert_excluded(root: Path, *words: str, n: int = 1, mlscen="Offline") -> dict:
    """s6's run ``n`` is not counted, its reasons say ``words``; the other run is counted."""
    data = aggregate(root)
    g = group(data, "s6", mlscen)
    r = run_of(g, n)
    why = " ".join(r["reasons"]).replace(str(root.parents[1]), "<tmp>")  # words, not the path
    assert not r["included"] and r["total"] is None, r
    for w in words:
        assert w in why, why
    other = run_of(g, 3 - n)
    assert other["included"], other
    assert group(data, "s1", mlscen)["status"] == "ok"
    return data


def report(root: Path, tmp_path: Path, *words: str) -> str:
    """``miglab report`` writes every file (a chart among them); report.md says ``words``."""
    out = tmp_path / "out"
    miglab("report", root, "-o", out, rc=0)
    names = {p.name for p in out.iterdir()}
    assert {"report.md", "report.html", "results.csv", "results.json"} <= names, names
    assert any(n.endswith(".png") for n in names), names
    json.loads((out / "results.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    md = (out / "report.md").read_text()
    for w in words:
        assert w in md, md[-3000:]
    return md


# --- 1. hangs and runaway memory -----------------------------------------------------------------
def test_fifo_log_named_on_the_command_line_is_refused(tmp_path):
    fifo = tmp_path / "run.log"  # not a LoadGen name: the old reader sniffed it, and waited
    os.mkfifo(fifo)
    res = miglab("results", "parse", fifo, rc=2)
    assert res.err.strip() == f"error: {fifo}: (top): is a FIFO, not a regular file"


@pytest.mark.parametrize("name", [DETAIL, SUMMARY, META])
@pytest.mark.parametrize("what", ["fifo", "dev-zero"])
def test_fifo_or_dev_zero_in_a_run_folder_is_listed_not_read(root, tmp_path, name, what):
    d = bad_run(root)
    if name == SUMMARY:
        (d / DETAIL).unlink()
    target = d / name
    target.unlink(missing_ok=True)
    if what == "fifo":
        os.mkfifo(target)
        words = ["FIFO"]
    else:
        target.symlink_to("/dev/zero")
        words = ["symbolic link", "/dev/zero", "refused"]
    assert_excluded(root, "vm2", *words)
    res = miglab("results", "parse", d, rc=2)
    assert all(w in res.err for w in words), res.err


@pytest.mark.parametrize("what", ["fifo", "dev-zero"])
def test_fifo_or_dev_zero_summary_beside_a_good_detail_log(root, what):
    d = bad_run(root)
    if what == "fifo":
        os.mkfifo(d / SUMMARY)
        word = "FIFO"
    else:
        (d / SUMMARY).symlink_to("/dev/zero")
        word = "/dev/zero"
    assert_excluded(root, "vm2", SUMMARY, word)


@pytest.mark.parametrize("name", [DETAIL, SUMMARY, META])
def test_huge_sparse_file_is_refused_without_reading_it(root, name):
    d = bad_run(root)
    if name == SUMMARY:
        (d / DETAIL).unlink()
    sparse(d / name, 4 * GiB)  # read whole, more than the command's address space
    assert_excluded(root, "vm2", "limit")


@pytest.mark.parametrize("what", ["fifo", "dev-zero"])
def test_manifest_entry_that_blocks_or_never_ends(root, what):
    d = bad_run(root)
    shutil.copy(OFFLINE / SUMMARY, d / SUMMARY)
    write_manifest(d)
    (d / SUMMARY).unlink()
    if what == "fifo":
        os.mkfifo(d / SUMMARY)
        word = "FIFO"
    else:
        (d / SUMMARY).symlink_to("/dev/zero")
        word = "symbolic link"
    res = miglab("results", "verify", root, rc=1)
    assert f"{d / SUMMARY}: " in res.out and word in res.out, res.out


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "huge"])
def test_manifest_itself_that_blocks_or_never_ends(root, what):
    d = bad_run(root)
    m = d / MANIFEST
    if what == "fifo":
        os.mkfifo(m)
        word = "FIFO"
    elif what == "dev-zero":
        m.symlink_to("/dev/zero")
        word = "symbolic link"
    else:
        sparse(m, 4 * GiB)
        word = "limit"
    res = miglab("results", "verify", root, rc=1)
    assert str(m) in res.out and word in res.out, res.out


@pytest.mark.parametrize("flag", ["--plan", "--campaign"])
@pytest.mark.parametrize("what", ["fifo", "dev-zero", "huge"])
def test_plan_file_that_blocks_or_never_ends(root, tmp_path, flag, what):
    f = tmp_path / "plan.json"
    if what == "fifo":
        os.mkfifo(f)
        word = "FIFO"
    elif what == "dev-zero":
        f.symlink_to("/dev/zero")
        word = "character device"
    else:
        sparse(f, 4 * GiB)
        word = "limit"
    res = miglab("results", "aggregate", root, flag, f, rc=2)
    assert res.err.startswith(f"error: {f}: (top): ") and word in res.err, res.err
    assert len(res.err.splitlines()) == 1 and res.out == ""


@pytest.mark.parametrize("command", ["aggregate", "report"])
@pytest.mark.parametrize("runs", ["1000000000", "101", "0", "-3"])
def test_runs_is_bounded(root, command, runs):
    args = ("results", "aggregate", root) if command == "aggregate" else ("report", root)
    res = miglab(*args, "--runs", runs, rc=2)
    assert res.err == (
        f"error: <command line>: --runs: must be from 1 to 100, got {int(runs)}\n"
    ), res.err


# --- 2. one bad log never kills the report -------------------------------------------------------
@pytest.mark.parametrize("depth", [600, 100_000])
@pytest.mark.parametrize("shape", ["[", '{"a":'])
def test_deeply_nested_json_line_is_a_bad_line_not_a_crash(root, tmp_path, depth, shape):
    d = bad_run(root)
    close = "]" if shape == "[" else "}"
    deep = shape * depth + "1" + close * depth
    line = ':::MLLOG {"key": "effective_deep", "value": ' + deep + ', "time_ms": 1.0}\n'
    with (d / DETAIL).open("a") as f:
        f.write(line)
    (rec,) = miglab("results", "parse", d, "--json", rc=0).json()
    assert rec["valid"] and rec["bad_lines"][0]["reason"].endswith("nested more than 16 deep")
    data = aggregate(root)
    assert run_of(group(data, "s6"), 1)["total"] == TOTAL  # the rest of the log is the run
    report(root, tmp_path)


def test_deeply_nested_metric_line_makes_the_run_invalid(root, tmp_path):
    d = bad_run(root)
    set_raw(d / DETAIL, "result_samples_per_second", "[" * 100_000 + "]" * 100_000)
    assert_excluded(root, "vm2", "result_samples_per_second")
    report(root, tmp_path, "result_samples_per_second")


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_run_metadata_is_the_runs_problem(root, depth):
    (bad_run(root) / META).write_text('{"notes": ' + "[" * depth + "]" * depth + "}")
    assert_excluded(root, "vm2", META, "nested more than")


# literal in the log -> words of the reason
NUMBERS = {
    "NaN": "not a finite number",
    "Infinity": "not a finite number",
    "-Infinity": "not a finite number",
    "1e999": "not a finite number",
    "-136656": "out of range",
    "0": "out of range",
    "1e20": "out of range",
    "1" + "0" * 400: "not a finite number",  # beyond a double: float() overflows
    "9" * 5000: "malformed",  # more digits than Python converts: the line is unreadable
    '"fast"': "not a number",
}


@pytest.mark.parametrize("literal", list(NUMBERS), ids=lambda x: x[:12])
def test_bad_throughput_makes_the_run_invalid_and_json_stays_json(root, literal):
    set_raw(bad_run(root) / DETAIL, "result_samples_per_second", literal)
    data = assert_excluded(root, "vm2")
    why = " ".join(run_of(group(data, "s6"), 1)["reasons"])
    assert NUMBERS[literal] in why or "result_samples_per_second" in why, why
    (rec,) = miglab("results", "parse", bad_run(root), "--json", rc=0).json()
    assert rec["valid"] is False
    assert any(NUMBERS[literal] in r for r in rec["invalid_reasons"]) or any(
        NUMBERS[literal] in b["reason"] for b in rec["bad_lines"]
    ), rec["invalid_reasons"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e999", "-136656"])
def test_bad_throughput_never_reaches_the_chart(root, tmp_path, literal):
    set_raw(bad_run(root) / DETAIL, "result_samples_per_second", literal)
    report(root, tmp_path, "vm2: ", "result_samples_per_second", NUMBERS[literal])


def test_every_run_of_a_scenario_bad_still_charts_the_others(root, tmp_path):
    for n in (1, 2):
        for vm in ("vm1", "vm2"):
            set_raw(run_dir(root, "s6", vm, n) / DETAIL, "result_samples_per_second", "NaN")
    md = report(root, tmp_path, "not a finite number")
    assert "| s1 | 1 |" in md


@pytest.mark.parametrize(
    ("key", "literal"),
    [
        ("result_mean_latency_ns", "NaN"),
        ("result_max_latency_ns", "-1"),
        ("effective_min_duration_ms", "Infinity"),
        ("effective_samples_per_query", "-102696000"),
    ],
)
def test_bad_number_anywhere_in_the_log_makes_the_run_invalid(root, key, literal):
    set_raw(bad_run(root) / DETAIL, key, literal)
    assert_excluded(root, "vm2", key)


@pytest.mark.parametrize("time_ms", ["1e300", "NaN", "-5"])
def test_bad_time_ms_is_a_reason_not_an_overflow(root, time_ms):
    f = bad_run(root) / DETAIL
    text = f.read_text().replace('"time_ms": 758186.208330', f'"time_ms": {time_ms}', 1)
    assert text != f.read_text()
    f.write_text(text)
    assert_excluded(root, "vm2", "time_ms")


@pytest.mark.parametrize("value", ["nan", "inf", "1e999", "-5"])
def test_bad_number_in_a_summary_only_run(root, value):
    d = bad_run(root)
    (d / DETAIL).unlink()
    text = (OFFLINE / SUMMARY).read_text()
    (d / SUMMARY).write_text(
        text.replace("Samples per second: 136656", f"Samples per second: {value}")
    )
    assert (d / SUMMARY).read_text() != text
    data = aggregate(root, "--allow-unchecked-overlap")
    r = run_of(group(data, "s6"), 1)
    assert not r["included"] and "vm2" in " ".join(r["reasons"]), r
    why = " ".join(r["reasons"])
    assert ("not a finite number" in why) or ("out of range" in why), why


@pytest.mark.parametrize(
    ("key", "value"),
    [("loadgen_version", ["1.1"]), ("effective_scenario", {"a": 1}), ("sut_name", 7)],
)
def test_values_of_the_wrong_type_do_not_crash_the_aggregate(root, tmp_path, key, value):
    edit(bad_run(root) / DETAIL, **{key: value})
    miglab("results", "aggregate", root, rc=0)
    miglab("results", "parse", bad_run(root), "--json", rc=0).json()
    report(root, tmp_path)


def test_a_million_bad_lines_give_bounded_output(root):
    d = bad_run(root)
    with (d / DETAIL).open("a") as f:
        f.write("garbage that is not an MLLOG line\n" * 300_000)
    (rec,) = miglab("results", "parse", d, "--json", rc=0).json()
    assert len(rec["bad_lines"]) == 20
    assert any("300000 unreadable line(s)" in n for n in rec["notes"])


def test_a_log_that_is_not_utf8_or_not_a_log_is_listed(root, tmp_path):
    (bad_run(root) / DETAIL).write_bytes(b"\xff\xfe\x00garbage\n" * 100)
    assert_excluded(root, "vm2", "unreadable log", "not an MLPerf LoadGen detail log")
    report(root, tmp_path, "not an MLPerf LoadGen detail log")


# --- 3. results dropped or certified wrongly -----------------------------------------------------
def test_run_1_and_run_01_do_not_collide(root):
    shutil.copytree(bad_run(root), run_dir(root, "s6", "vm2", "run_01"))
    data = aggregate(root)
    assert any("'run_01'" in p and "not named run_<n>" in p for p in data["problems"])
    g = group(data, "s6")
    assert any("run_01" in n for n in g["notes"]), g["notes"]
    assert run_of(g, 1)["included"]  # run_1 itself is fine


@pytest.mark.parametrize(
    "name", ["run_01", "run_1 ", "run_1\n", "run_\u0661", "run_+1", "run_1.0", "RUN_1", "run_0"]
)
def test_odd_run_folder_names_are_refused_and_the_run_is_incomplete(root, name):
    # vm2's run_1 renamed, its run_2 removed: s6 must not become a complete 1-VM scenario
    src = run_dir(root, "s6", "vm2", 1)
    src.rename(src.with_name(name))
    shutil.rmtree(run_dir(root, "s6", "vm2", 2))
    data = aggregate(root)
    g = group(data, "s6")
    assert "vm2" in g["vms"] and g["status"] == "invalid", g
    assert all(not r["included"] for r in g["runs"])
    why = " ".join(run_of(g, 1)["reasons"])
    assert "vm2" in why and "not named run_<n>" in why, why
    res = miglab("results", "verify", root, rc=1)
    assert "not named run_<n>" in res.out
    res = miglab("results", "aggregate", root, rc=0)
    assert res.err and all(line.startswith("warning: ") for line in res.err.splitlines())


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_symlinked_vm_folder_makes_the_scenario_incomplete(root, tmp_path, where):
    vm2 = root / "s6" / "vm2"
    if where == "outside":
        elsewhere = tmp_path / "elsewhere" / "vm2"
        shutil.move(vm2, elsewhere)
        vm2.symlink_to(elsewhere)
    else:  # a copy of vm1's runs posing as vm2's: counted twice if followed
        shutil.rmtree(vm2)
        vm2.symlink_to("vm1")
    data = aggregate(root)
    g = group(data, "s6")
    assert g["vms"] == ["vm1", "vm2"] and g["status"] == "invalid", g
    why = " ".join(run_of(g, 1)["reasons"])
    assert "vm2" in why and "symbolic link" in why and f"{where} the results tree" in why, why
    res = miglab("results", "verify", root, rc=1)
    assert f"{vm2}: a symbolic link" in res.out
    miglab("report", root, "-o", tmp_path / "out", rc=0)


def test_symlinked_run_folder_is_refused(root, tmp_path):
    d = run_dir(root, "s6", "vm2", 2)
    shutil.move(d, tmp_path / "run_2")
    d.symlink_to(tmp_path / "run_2")
    assert_excluded(root, "vm2", "symbolic link", "outside the results tree", n=2)
    res = miglab("results", "verify", root, rc=1)
    assert f"{d}: a symbolic link" in res.out


@pytest.mark.parametrize("name", [DETAIL, SUMMARY, META])
def test_log_symlinked_outside_the_tree_is_refused(root, tmp_path, name):
    d = bad_run(root)
    outside = tmp_path / "outside.txt"
    src = {DETAIL: OFFLINE / DETAIL, SUMMARY: OFFLINE / SUMMARY}.get(name)
    if src:
        shutil.copy(src, outside)
    else:
        outside.write_text(json.dumps({"simulated": False}))
    (d / name).unlink(missing_ok=True)
    (d / name).symlink_to(outside)
    assert_excluded(root, "vm2", "symbolic link", "refused")
    for vm in ("vm1", "vm2"):
        for n in (1, 2):
            if not (run_dir(root, "s6", vm, n) / MANIFEST).exists():
                write_manifest(run_dir(root, "s6", vm, n))
    res = miglab("results", "verify", root / "s6", rc=1)
    assert f"{d / name}: a symbolic link to '{outside}' (outside the results tree)" in res.out


def _manifested(root: Path) -> tuple[Path, str]:
    d = bad_run(root)
    write_manifest(d)
    return d, sha256_file(d / DETAIL)


def test_manifest_listing_a_file_twice_fails_verification(root):
    d, digest = _manifested(root)
    m = d / MANIFEST
    m.write_text(f"{'0' * 64}  {DETAIL}\n" + m.read_text())  # a wrong line, then the right one
    res = miglab("results", "verify", bad_run(root), rc=1)
    assert f"lists '{DETAIL}' again" in res.out, res.out
    data = miglab("results", "verify", bad_run(root), "--json", rc=1).json()
    assert [p["kind"] for p in data["problems"]] == ["bad-manifest", "checksum"]


@pytest.mark.parametrize("path", ["../run_2/mlperf_log_detail.txt", "/etc/hostname", "./x", ""])
def test_manifest_path_outside_the_run_folder_fails_verification(root, path):
    d, digest = _manifested(root)
    with (d / MANIFEST).open("a") as f:
        f.write(f"{digest}  {path}\n")
    res = miglab("results", "verify", d, rc=1)
    assert f"{d / MANIFEST}: line 2: " in res.out, res.out


def test_summary_invalid_beside_a_valid_detail_log(tmp_path):
    root = make_tree(tmp_path, summary=True)
    s = bad_run(root) / SUMMARY
    s.write_text(s.read_text().replace("Result is : VALID", "Result is : INVALID"))
    assert_excluded(root, "vm2", 'says result "INVALID"')
    (rec,) = miglab("results", "parse", bad_run(root), "--json", rc=0).json()
    assert not rec["valid"]


@pytest.mark.parametrize(
    ("line", "now"),
    [
        ("Min duration satisfied : Yes", "Min duration satisfied : NO"),
        ("Min queries satisfied : Yes", "Min queries satisfied : NO"),
        ("Scenario : Offline", "Scenario : Server"),
        ("Mode     : PerformanceOnly", "Mode     : AccuracyOnly"),
    ],
)
def test_summary_contradicting_its_detail_log(tmp_path, line, now):
    root = make_tree(tmp_path, summary=True)
    s = bad_run(root) / SUMMARY
    text = s.read_text()
    assert line in text
    s.write_text(text.replace(line, now))
    assert_excluded(root, "vm2", SUMMARY)


def test_summary_saying_min_queries_skipped_is_not_a_contradiction(root):
    # LoadGen 5+ writes "Skipped" there when it does not enforce the minimum query count, and
    # VALID beside it: that summary agrees with itself (a guard against being too strict)
    d = bad_run(root)
    (d / DETAIL).unlink()
    text = (OFFLINE / SUMMARY).read_text()
    skipped = text.replace("Min queries satisfied : Yes", "Min queries satisfied : Skipped")
    assert skipped != text
    (d / SUMMARY).write_text(skipped)
    (rec,) = miglab("results", "parse", d, "--json", rc=0).json()
    assert rec["valid"] and rec["invalid_reasons"] == [], rec["invalid_reasons"]


@pytest.mark.parametrize(
    ("src", "mlscen", "key", "value"),
    [
        (OFFLINE, "Offline", "result_min_duration_met", False),
        (OFFLINE, "Offline", "result_min_queries_met", False),
        (SERVER, "Server", "result_perf_constraints_met", False),
        (H200, "Server", "early_stopping_met", False),
        (OFFLINE, "Offline", "result_min_duration_met", "false"),
        (OFFLINE, "Offline", "result_min_queries_met", 0),
    ],
)
def test_valid_beside_a_failed_check_is_invalid(tmp_path, src, mlscen, key, value):
    root = make_tree(tmp_path, src=src, mlscen=mlscen)
    edit(bad_run(root, mlscen) / DETAIL, **{key: value})
    assert_excluded(root, "vm2", "LoadGen says VALID, but", key, mlscen=mlscen)
    res = miglab("results", "parse", bad_run(root, mlscen), rc=0)
    assert "LoadGen: NOT VALID: LoadGen says VALID, but" in res.out and key in res.out


# --- 4. bad command-line input is exit 2, one line; odd names are printed ------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "2"])
def test_min_overlap_out_of_range(root, value):
    res = miglab("results", "aggregate", root, "--min-overlap", value, rc=2)
    assert res.err == "error: <command line>: min_overlap: must be in [0, 1]\n"


def test_report_output_that_is_a_file(root, tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    res = miglab("report", root, "-o", f, rc=2)
    assert (
        res.err.startswith(f"error: {f}: (top): cannot be the output folder")
        and len(res.err.splitlines()) == 1
    )


@pytest.mark.parametrize(
    "text", ['{"s6": {"4g.40gb": NaN}}', '{"s6": ' * 5000 + "1" + "}" * 5000, "[1, 2"]
)
def test_plan_json_that_is_not_json(root, tmp_path, text):
    f = tmp_path / "plan.json"
    f.write_text(text)
    res = miglab("results", "aggregate", root, "--plan", f, rc=2)
    assert res.err.startswith(f"error: {f}: (top): not JSON") and len(res.err.splitlines()) == 1


@pytest.mark.parametrize("odd", [os.fsdecode(b"vm\xff"), "vm1\u00b2", "vm\n3"])
def test_odd_vm_folder_names_are_printed(root, tmp_path, odd):
    # not UTF-8; a superscript digit (a "digit" Python cannot convert); a newline
    shutil.copytree(root / "s6" / "vm2", root / "s6" / odd)
    res = miglab("results", "aggregate", root, rc=0)
    assert "3 VM(s)" in res.out
    miglab("results", "aggregate", root, "--json", rc=0).json()
    miglab("results", "parse", root, rc=0)
    report(root, tmp_path)
