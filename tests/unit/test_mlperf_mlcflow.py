"""The ``mlcflow`` backend without mlcflow: the mlcr command, the log finder, prepare's checks and
a whole run through a fake ``mlcr`` on PATH.

The fake writes its logs where mlcr does (mlperf-automations @
20d3d94c4fbbefca1a69f0e2b23295d196fd3e63,
``script/generate-mlperf-inference-user-conf/customize.py``: ``<results_dir>/<execution
mode>_results/<hw_name>-<implementation>-<device>-<framework>-v<version>-default_config/
<model>/<scenario lower>/performance/run_1``, ``.../accuracy``), copying real published LoadGen
logs from tests/fixtures/mlperf unmodified; on failure it prints mlcr's closing lines as mlcflow
1.3.8 does (``Error : ...``, ``Failed script: ...``, recorded in
docs/research/issue18-mlcflow.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from miglab.core.runs import parse_run
from miglab.formats.run_meta import RUN_META, read_run_meta
from miglab.mlperf.guest.backends.base import BackendError
from miglab.mlperf.guest.backends.mlcflow import (
    MlcflowBackend,
    MlcflowSettings,
    find_mlcr_logs,
    mlcflow_version,
    mlcr_command,
    mlcr_failure,
    prestaged_args,
    registered_repos,
)

FIX = (
    Path(__file__).resolve().parents[1]
    / "fixtures/mlperf/inference_results_v1.1/closed/Dell/results"
    / "R750xa_A100-PCIE-80GB-MIG_28x1g.10gb_TRT_Triton/resnet50"
)
RN50_OFFLINE = FIX / "Offline" / "performance" / "run_1"
RN50_SERVER = FIX / "Server" / "performance" / "run_1"

FAKE_MLCR = r'''#!{python}
"""A stand-in for mlcflow's mlcr run-mlperf,inference: writes LoadGen logs where mlcr does."""
import json, os, shutil, sys
from pathlib import Path

tags = sys.argv[1].split(",")
opts = {}
for a in sys.argv[2:]:
    k, eq, v = a[2:].partition("=")
    opts[k] = v if eq else True
if os.environ.get("FAKE_MLCR_CALLS"):
    with open(os.environ["FAKE_MLCR_CALLS"], "a") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(),
                            "MLC_REPOS": os.environ.get("MLC_REPOS")}) + "\n")
Path("version_info.json").write_text("{}\n")  # the real one leaves files in its cwd
rc = int(os.environ.get("FAKE_MLCR_RC", "0"))
if rc:
    print("Cloning into 'inference'...")
    print("fatal: unable to access 'https://github.com/mlcommons/inference/': "
          "Could not resolve host: github.com")
    print("[2026-12-05 05:08:33,793 main.py        : 124 ERROR] - Error during 'script' action: "
          "Script run execution failed in .../automation/script/module.py. ")
    print("Error : Native run script failed inside MLC script (name = get-git-repo, "
          "return code = 256)")
    print("[2026-12-05 05:08:33,794 main.py        : 169 ERROR] - Failed script: get-git-repo")
    sys.exit(rc)
if os.environ.get("FAKE_MLCR_NO_LOGS"):
    sys.exit(0)
mode = "accuracy" if "_accuracy-only" in tags else "performance"
sut = "-".join((opts["hw_name"], opts["implementation"], opts["device"], opts["framework"],
                "v1.30.0", "default_config"))
d = (Path(opts["results_dir"]) / (opts["execution_mode"] + "_results") / sut / opts["model"]
     / opts["scenario"].lower() / mode)
if mode == "performance":
    d = d / "run_1"
d.mkdir(parents=True, exist_ok=True)
src = Path(os.environ["FAKE_MLCR_LOGS"]) / opts["scenario"] / "performance" / "run_1"
for name in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
    shutil.copyfile(src / name, d / name)
if mode == "accuracy":
    (d / "mlperf_log_accuracy.json").write_text("[]\n")
    (d / "accuracy.txt").write_text("accuracy=76.456%, good=38228, total=50000\n")
print("The MLPerf inference results are stored at", Path(opts["results_dir"]) / "test_results")
'''

FAKE_MLC = """#!/bin/sh
echo "[2026-12-05 05:07:58,820 action.py : 265 INFO ] - Created repos.json"
echo "mlcflow 1.3.8"
"""


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A fake mlcr (and mlc) on PATH, a fake mlperf-automations checkout registered in
    MLC_REPOS, and where the fake writes down its calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _exe(bindir / "mlcr", FAKE_MLCR.replace("{python}", sys.executable))
    _exe(bindir / "mlc", FAKE_MLC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_MLCR_LOGS", str(FIX))
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_MLCR_CALLS", str(calls))
    repo = tmp_path / "mlperf-automations"
    (repo / "script" / "run-mlperf-inference-app").mkdir(parents=True)
    (repo / "meta.yaml").write_text("alias: mlcommons@mlperf-automations\nuid: 9cf241afa6074c89\n")
    (repo / "script" / "run-mlperf-inference-app" / "meta.yaml").write_text(
        "alias: run-mlperf-inference-app\n"
    )
    commit = None
    if shutil.which("git"):
        git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "scripts"], check=True)
        commit = subprocess.run(
            [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
    repos = tmp_path / "MLC" / "repos"
    (repos / "local").mkdir(parents=True)
    (repos / "repos.json").write_text(json.dumps([str(repos / "local"), str(repo)]))

    class Lab:
        pass

    lab = Lab()
    lab.tmp, lab.repo, lab.repos, lab.calls, lab.commit = tmp_path, repo, repos, calls, commit
    lab.work = tmp_path / "work"
    lab.read_calls = lambda: [json.loads(x) for x in calls.read_text().splitlines()]
    return lab


def _settings(lab, **kw) -> MlcflowSettings:
    base = {
        "repo": str(lab.repo),
        "mlc_repos": str(lab.repos),
        "work_dir": str(lab.work),
        "execution_mode": "test",
        "hw_name": "vm1",
    }
    base.update(kw)
    return MlcflowSettings(**base)


# --- the command --------------------------------------------------------------------------------
def test_command_reference_defaults(tmp_path):
    adr, inputs = prestaged_args(
        inference_src="/opt/inference",
        model_file="/opt/models/resnet50_v1.onnx",
        imagenet_path="/data/imagenet-val",
    )
    s = MlcflowSettings(repo="/opt/mlperf-automations", adr=adr, inputs=inputs, target_qps=512.0)
    cmd = mlcr_command(s, "resnet", "Offline", "PerformanceOnly", tmp_path / "r")
    assert cmd == [
        "mlcr",
        "run-mlperf,inference,_performance-only",
        "--model=resnet50",
        "--implementation=reference",
        "--framework=onnxruntime",
        "--device=cpu",
        "--scenario=Offline",
        "--category=datacenter",
        "--division=open",
        "--execution_mode=valid",
        "--hw_name=miglab",
        f"--results_dir={tmp_path / 'r'}",
        "--rerun",
        "--quiet",
        "--target_qps=512",
        "--imagenet_path=/data/imagenet-val",
        "--adr.compiler.tags=gcc",
        "--adr.inference-src-loadgen.env.MLC_GIT_URL=/opt/inference",
        "--adr.inference-src.env.MLC_GIT_URL=/opt/inference",
        "--adr.model-downloader.env.MLC_DOWNLOAD_LOCAL_FILE_PATH=/opt/models/resnet50_v1.onnx",
    ]


def test_command_nvidia_accuracy_and_warmup(tmp_path):
    s = MlcflowSettings(
        mlcr="/opt/mlc/bin/mlcr",
        implementation="nvidia",
        framework="tensorrt",
        device="cuda",
        variations=("r6.0",),
        env={"MLC_MLPERF_NVIDIA_SKIP_BERT": "yes"},
        extra_args=("--docker_cache=no",),
        min_duration_ms=600000,
    )
    cmd = mlcr_command(s, "bert-99", "Server", "AccuracyOnly", "/r")
    assert cmd[:2] == ["/opt/mlc/bin/mlcr", "run-mlperf,inference,_accuracy-only,_r6.0"]
    assert "--model=bert-99" in cmd and "--scenario=Server" in cmd
    assert "--min_duration=600000" in cmd
    assert cmd[-2:] == ["--env.MLC_MLPERF_NVIDIA_SKIP_BERT=yes", "--docker_cache=no"]
    warm = mlcr_command(s, "bert-99", "Server", "AccuracyOnly", "/r", warmup=True)
    assert warm[1] == "run-mlperf,inference,_find-performance,_r6.0"
    assert "--execution_mode=test" in warm and not any("min_duration" in c for c in warm)


@pytest.mark.parametrize(
    ("kw", "args", "msg"),
    [
        ({"inputs": {"results_dir": "/x"}}, ("resnet50", "Offline", "PerformanceOnly"), "itself"),
        ({}, ("gptj", "Offline", "PerformanceOnly"), "unknown benchmark"),
        ({}, ("resnet50", "SingleStream", "PerformanceOnly"), "scenario"),
        ({}, ("resnet50", "Offline", "SubmissionRun"), "mode"),
    ],
)
def test_command_refuses(kw, args, msg):
    with pytest.raises(BackendError, match=msg):
        mlcr_command(MlcflowSettings(**kw), *args, "/r")


def test_prestaged_args_stand_in_model():
    adr, inputs = prestaged_args(
        model_file="/m.onnx", model_checksum=False, results_repo="/git/results", compiler=None
    )
    assert adr == {
        "model-downloader.env.MLC_DOWNLOAD_LOCAL_FILE_PATH": "/m.onnx",
        "model-downloader.env.MLC_DOWNLOAD_CHECKSUM": "",
        "inference-results-repo.env.MLC_GIT_URL": "/git/results",
    }
    assert inputs == {}


# --- finding mlcr's logs ------------------------------------------------------------------------
def _put(root: Path, rel: str, src: Path = RN50_OFFLINE) -> Path:
    d = root / rel
    d.mkdir(parents=True)
    shutil.copyfile(src / "mlperf_log_detail.txt", d / "mlperf_log_detail.txt")
    return d


def test_find_mlcr_logs(tmp_path):
    sut = "vm1-reference-cpu-onnxruntime-v1.30.0-default_config"
    perf = _put(tmp_path, f"test_results/{sut}/resnet50/offline/performance/run_1")
    acc = _put(tmp_path, f"test_results/{sut}/resnet50/offline/accuracy")
    _put(tmp_path, f"test_results/{sut}/resnet50/server/performance/run_1")
    _put(tmp_path, f"test_results/{sut}/bert-99/offline/performance/run_1")
    newer = _put(tmp_path, "valid_results/other-sut/resnet50/offline/performance/run_1")
    os.utime(newer / "mlperf_log_detail.txt", (2e9, 2e9))
    (tmp_path / f"test_results/{sut}/resnet50/offline/performance/run_2").mkdir()
    assert find_mlcr_logs(tmp_path, "resnet50", "Offline", "PerformanceOnly") == [newer, perf]
    assert find_mlcr_logs(tmp_path, "resnet", "Offline", "PerformanceOnly", "test") == [perf]
    assert find_mlcr_logs(tmp_path, "resnet50", "Offline", "AccuracyOnly") == [acc]
    assert find_mlcr_logs(tmp_path, "bert-99.9", "Offline", "PerformanceOnly") == []
    assert find_mlcr_logs(tmp_path / "none", "resnet50", "Offline", "PerformanceOnly") == []


# --- prepare's checks ---------------------------------------------------------------------------
def test_registered_repos(tmp_path):
    with pytest.raises(BackendError, match="mlc add repo"):
        registered_repos(tmp_path)
    (tmp_path / "repos.json").write_text('{"not": "a list"}')
    with pytest.raises(BackendError, match="not a JSON list"):
        registered_repos(tmp_path)
    (tmp_path / "repos.json").write_text('["/a", " /b\\n", ""]')
    assert registered_repos(tmp_path) == [Path("/a"), Path("/b")]


def test_prepare_refuses(lab, tmp_path):
    def refused(msg, **kw):
        with pytest.raises(BackendError, match=msg) as exc:
            MlcflowBackend().prepare(_settings(lab, warmup=False, **kw))
        assert "\n" not in str(exc.value)

    refused(r"no-such-mlcr: not found \(pip install mlcflow", mlcr="no-such-mlcr")
    refused("no mlperf-automations checkout", repo="")
    refused("no such folder", repo=str(tmp_path / "nothing"))
    (tmp_path / "plain").mkdir()
    refused("not an mlperf-automations checkout", repo=str(tmp_path / "plain"))
    other = tmp_path / "other-repos"
    other.mkdir()
    (other / "repos.json").write_text(json.dumps([str(other / "local")]))
    refused(
        rf"is not registered in {other}/repos.json \(run: MLC_REPOS={other} mlc add repo "
        r".*without it mlcr clones mlcommons@mlperf-automations from GitHub",
        mlc_repos=str(other),
    )
    refused("execution_mode 'quick'", execution_mode="quick")
    refused("device 'cuda:1'", device="cuda:1")
    refused("weights 'fake'", weights="fake")
    refused("unsupported scenario", scenarios=("MultiStream",))
    assert not lab.calls.exists()  # nothing ran mlcr


def test_prepare_reads_mlc_repos_from_the_environment(lab, monkeypatch):
    monkeypatch.setenv("MLC_REPOS", str(lab.repos))
    be = MlcflowBackend()
    be.prepare(_settings(lab, mlc_repos=None, warmup=False))
    assert be.repo_commit == lab.commit


# --- a whole run through the fake mlcr ----------------------------------------------------------
def test_prepare_and_run(lab):
    be = MlcflowBackend()
    be.prepare(
        _settings(
            lab,
            scenarios=("Offline", "Server"),
            adr=prestaged_args(inference_src="/git/inference")[0],
            process_env={"PIP_FIND_LINKS": "/opt/wheels"},
            meta={"vm": "camp-s1-vm1", "scenario": "s1"},
        )
    )
    assert be.mlcflow_version == "1.3.8" and be.repo_commit == lab.commit
    warm = lab.read_calls()
    assert [c["argv"][0] for c in warm] == ["run-mlperf,inference,_find-performance"] * 2
    assert all(c["cwd"] == str(lab.work) and c["MLC_REPOS"] == str(lab.repos) for c in warm)
    assert "--adr.inference-src.env.MLC_GIT_URL=/git/inference" in warm[0]["argv"]
    out = lab.tmp / "results" / "camp" / "s1" / "vm1"
    for n, (scenario, src) in enumerate((("Offline", RN50_OFFLINE), ("Server", RN50_SERVER)), 1):
        run_dir = be.run("resnet50", scenario, "PerformanceOnly", out, n)
        assert run_dir == out / "resnet50" / scenario / "performance" / f"run_{n}"
        for f in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
            assert (run_dir / f).read_bytes() == (src / f).read_bytes()
        meta = json.loads((run_dir / RUN_META).read_text())
        assert (meta["backend"], meta["weights"], meta["inputs"]) == ("mlcflow", "real", "real")
        assert meta["vm"] == "camp-s1-vm1" and meta["run"] == n
        m = meta["mlcflow"]
        assert m["command"] == be.commands[-1] and m["command"][1:] == lab.read_calls()[-1]["argv"]
        assert m["command"][1] == "run-mlperf,inference,_performance-only"
        assert m["mlperf_automations"]["commit"] == lab.commit
        assert m["mlperf_automations"]["path"] == str(lab.repo)
        assert m["version"] == "1.3.8" and m["execution_mode"] == "test"
        assert Path(m["log_dir"]).is_relative_to(m["results_dir"])
        assert Path(m["console_log"]).is_file()
        assert meta["device"]["kind"] == "cpu"
        assert meta["loadgen"]["validity"] == "VALID"
        rec = parse_run(run_dir)
        assert rec.valid and rec.value == parse_run(src).value and rec.meta.backend == "mlcflow"
        assert read_run_meta(run_dir).backend == "mlcflow"
    # each run had its own results folder: the fake would have been skipped by the real mlcr
    dirs = [json.loads((out / "resnet50" / sc / "performance" / f"run_{n}" / RUN_META).read_text())
            ["mlcflow"]["results_dir"] for n, sc in ((1, "Offline"), (2, "Server"))]  # fmt: skip
    assert len(set(dirs)) == 2
    with pytest.raises(BackendError, match="already holds"):
        be.run("resnet50", "Offline", "PerformanceOnly", out, 1)


def test_accuracy_run(lab):
    be = MlcflowBackend()
    be.prepare(_settings(lab, warmup=False))
    out = lab.tmp / "out"
    run_dir = be.run("resnet50", "Offline", "AccuracyOnly", out, 1)
    assert run_dir == out / "resnet50" / "Offline" / "accuracy" / "run_1"
    assert (run_dir / "mlperf_log_accuracy.json").read_text() == "[]\n"
    assert (run_dir / "accuracy.txt").is_file()
    assert "_accuracy-only" in lab.read_calls()[-1]["argv"][0]


def test_run_reports_mlcr_failure(lab, monkeypatch):
    be = MlcflowBackend()
    be.prepare(_settings(lab, warmup=False))
    monkeypatch.setenv("FAKE_MLCR_RC", "1")
    with pytest.raises(BackendError) as exc:
        be.run("resnet50", "Offline", "PerformanceOnly", lab.tmp / "out", 1)
    msg = str(exc.value)
    assert msg.startswith("mlcr failed (exit 1) in script get-git-repo: Native run script failed")
    assert "(log: " in msg and "\n" not in msg
    monkeypatch.delenv("FAKE_MLCR_RC")
    monkeypatch.setenv("FAKE_MLCR_NO_LOGS", "1")
    with pytest.raises(BackendError, match=r"mlcr wrote no LoadGen logs under .*test_results"):
        be.run("resnet50", "Offline", "PerformanceOnly", lab.tmp / "out", 1)


def test_warmup_failure_fails_prepare(lab, monkeypatch):
    monkeypatch.setenv("FAKE_MLCR_RC", "2")
    with pytest.raises(BackendError, match="mlcr failed .exit 2. in script get-git-repo"):
        MlcflowBackend().prepare(_settings(lab))


def test_run_needs_prepare_and_refuses_compliance(lab):
    be = MlcflowBackend()
    with pytest.raises(BackendError, match="prepare"):
        be.run("resnet50", "Offline", "PerformanceOnly", lab.tmp, 1)
    be.prepare(_settings(lab, warmup=False))
    be.compliance = "TEST01"
    with pytest.raises(BackendError, match="compliance test TEST01"):
        be.run("resnet50", "Offline", "PerformanceOnly", lab.tmp, 1)


def test_mlcr_failure_lines():
    # mlcflow 1.3.8's closing lines, offline (docs/research/issue18-mlcflow.md)
    text = (
        "wget: unable to resolve host address 'www.dropbox.com'\n"
        "[2026-12-05 05:10:04,540 main.py        : 124 ERROR] - Error during 'script' action: "
        "Script run execution failed in .../module.py. \n"
        "Error : Native run script failed inside MLC script (name = download-file, "
        "return code = 256)\n\n\n"
        "[2026-12-05 05:10:04,542 main.py        : 169 ERROR] - Failed script: download-file\n"
    )
    assert mlcr_failure(text) == (
        "script download-file: Native run script failed inside MLC script "
        "(name = download-file, return code = 256)"
    )
    assert mlcr_failure("nothing") == "no error line in its output"


def test_mlcflow_version_without_mlc(tmp_path, monkeypatch):
    _exe(tmp_path / "mlcr", "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert mlcflow_version("mlcr") is None
    assert mlcflow_version("no-such-command") is None


def test_run_command_builds_mlcflow_settings():
    """``python -m miglab.mlperf.run --backend mlcflow``: mlcr's settings from the options."""
    from miglab.mlperf.guest.backends import BackendError, get_backend
    from miglab.mlperf.guest.backends.mlcflow import MlcflowBackend, MlcflowSettings
    from miglab.mlperf.guest.run import build_parser, settings_from_args

    argv = [
        "--backend", "mlcflow", "--benchmark", "resnet50", "--out", "/o",
        "--mlc-repo", "/opt/mlperf-automations", "--mlc-variation", "_r6.0",
        "--mlc-adr", "inference-src.env.MLC_GIT_URL=/opt/inference",
        "--mlc-input", "imagenet_path=/data/imagenet", "--min-duration-ms", "1000",
    ]  # fmt: skip
    s = settings_from_args(build_parser().parse_args(argv))
    assert isinstance(s, MlcflowSettings) and s.repo == "/opt/mlperf-automations"
    assert s.adr == {"inference-src.env.MLC_GIT_URL": "/opt/inference"}
    assert s.inputs == {"imagenet_path": "/data/imagenet"} and s.variations == ("_r6.0",)
    assert s.min_duration_ms == 1000 and s.benchmarks == ("resnet50",)
    assert isinstance(get_backend("mlcflow"), MlcflowBackend)
    with pytest.raises(BackendError, match="needs --mlc-repo"):
        settings_from_args(build_parser().parse_args(argv[:6]))
    with pytest.raises(BackendError, match="not NAME=VALUE"):
        settings_from_args(build_parser().parse_args([*argv, "--mlc-env", "X"]))
