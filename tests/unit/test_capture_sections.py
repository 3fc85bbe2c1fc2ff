"""Captures as operators save them (issue 20, part 3): several nvidia-smi commands' output in one
file, with shell prompts, command lines and blank lines. ``miglab gpu import-mig`` and ``miglab gpu
inspect`` read the sections they know wherever they are, name what they ignored in one line and
fail (exit 2, one line naming the file) only when no section they read is there.

The mixed fixtures are real captures (tests/fixtures/nvidia-smi, see its README) concatenated with
prompt lines; :data:`MIXED` is how each was made, and the first test checks it byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from miglab.core.importers import inspect_gpus_note, model_from_capture, model_from_capture_note
from miglab.errors import ValidationError
from miglab.formats.nvsmi import read_mig_capture, split_capture
from testlib import FIXTURES

pytestmark = pytest.mark.unit

NVSMI = FIXTURES / "nvidia-smi"
QUERY = (
    "nvidia-smi --query-gpu=name,pci.device_id,pci.sub_device_id,pci.bus_id,driver_version,"
    "mig.mode.current,mig.mode.pending,memory.total,serial,uuid --format=csv"
)
NOHEADER = (
    "nvidia-smi --query-gpu=name,pci.device_id,pci.bus_id,driver_version,mig.mode.current,"
    "mig.mode.pending,memory.total --format=csv,noheader,nounits"
)
# fixture -> its parts: a real capture (a file name) or a typed line (ends with a newline)
MIXED = {
    "h200-capture-mixed.txt": [
        "$ nvidia-smi\n", "h200-nvidia-smi.txt", "\n",
        "$ nvidia-smi mig -lgip\n", "h200-mig-lgip.txt", "\n",
        "$ nvidia-smi mig -lgipp\n", "h200-mig-lgipp.txt", "\n",
        "$ nvidia-smi mig -lcip\n", "h200-mig-lcip.txt", "\n",
        f"$ {QUERY}\n", "h200-query-gpu.csv",
    ],
    "h200-capture-esxi-prompt.txt": [
        "[root@esxi:~] nvidia-smi mig -lcip\n", "h200-mig-lcip.txt",
        f"[root@esxi:~] {NOHEADER}\n", "h200-query-gpu-noheader-nounits.csv",
        "[root@esxi:~] nvidia-smi mig -lgipp\n", "h200-mig-lgipp.txt",
        "[root@esxi:~] nvidia-smi mig -lgip\n", "h200-mig-lgip.txt",
        "[root@esxi:~] nvidia-smi -q\n", "h200-q.txt",
        "[root@esxi:~] nvidia-smi --version\n", "h200-version.txt",
    ],
    "a30-capture-mixed.txt": [
        "$ sudo nvidia-smi mig -lgip\n", "a30-mig-lgip.txt", "\n",
        "$ sudo nvidia-smi mig -lgipp\n", "a30-mig-lgipp.txt",
    ],
}  # fmt: skip
MIG_OFF = "nvidia-smi mig -lcip: No MIG-enabled devices found."
# what nvidia-smi -L prints for this H200 (its UUID zeroed like the fixtures'): typed, not captured
DASH_L = "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"


def read(name: str) -> str:
    return (NVSMI / name).read_text()


def cli(*args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``miglab ARGS``, run in this process."""
    from miglab.cli.commands import main

    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in args])
        except SystemExit as exc:
            rc = exc.code
    out.flush()
    err.flush()
    return rc, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()


def mig_shape(model) -> dict:
    data = model.as_json()
    return {k: v for k, v in data.items() if k not in ("gpu", "product_names", "vgpu")}


# ---- the fixtures are what their README says ---------------------------------------------------


@pytest.mark.parametrize("name", sorted(MIXED))
def test_a_mixed_fixture_is_its_real_parts_concatenated(name):
    parts = MIXED[name]
    assert (NVSMI / name).read_text() == "".join(p if "\n" in p else read(p) for p in parts)
    assert f"`{name}`" in read("README.md")


# ---- import-mig -------------------------------------------------------------------------------


def test_a_mixed_h200_capture_imports_as_its_lgip_and_lgipp_alone():
    mixed = model_from_capture(read("h200-capture-mixed.txt"), "mixed.txt", name="X")
    alone = model_from_capture(read("h200-mig-lgip.txt") + read("h200-mig-lgipp.txt"), "a", "X")
    assert mig_shape(mixed) == mig_shape(alone)
    assert mixed.product_names == ("NVIDIA H200",)  # named by the --query-gpu CSV


def test_import_mig_of_a_mixed_h200_capture_is_the_catalog_h200():
    f = NVSMI / "h200-capture-mixed.txt"
    rc, out, err = cli("gpu", "import-mig", f, "--json")
    assert rc == 0, err
    assert err.splitlines() == [
        f"note: {f}: ignored: lines 1-21 (nvidia-smi), lines 60-61 ({MIG_OFF})"
    ]
    data = json.loads(out)
    assert data["gpu"] == "H200-SXM"
    rc, catalog, _ = cli("gpu", "profiles", "H200-SXM", "--json")
    key = lambda p: json.dumps(p, sort_keys=True)  # noqa: E731
    assert sorted(map(key, data["profiles"])) == sorted(map(key, json.loads(catalog)["profiles"]))


def test_mig_off_lcip_first_and_lgipp_before_lgip_still_import():
    f = NVSMI / "h200-capture-esxi-prompt.txt"
    rc, out, err = cli("gpu", "import-mig", f, "--json")
    assert rc == 0, err
    assert err.splitlines() == [
        f"note: {f}: ignored: lines 1-2 ({MIG_OFF}), lines 40-296 (nvidia-smi -q), "
        "lines 298-302 (nvidia-smi --version)"
    ]
    assert json.loads(out)["gpu"] == "H200-SXM"  # named by the noheader CSV's name column
    mixed = model_from_capture(read("h200-capture-esxi-prompt.txt"), "e.txt", name="X")
    alone = model_from_capture(read("h200-mig-lgip.txt") + read("h200-mig-lgipp.txt"), "a", "X")
    assert mig_shape(mixed) == mig_shape(alone)


def test_sudo_prompts_and_blank_lines_around_a30_listings():
    model, note = model_from_capture_note(read("a30-capture-mixed.txt"), "a30.txt", "A30")
    alone = model_from_capture(read("a30-mig-lgip.txt") + read("a30-mig-lgipp.txt"), "a", "A30")
    assert note is None  # nothing but the listings and their command lines
    assert mig_shape(model) == mig_shape(alone)


def test_dash_L_lines_name_the_gpu_before_the_csv_does():
    text = "[root@esxi:~] nvidia-smi -L\n" + DASH_L + "\n" + read("h200-capture-mixed.txt")
    cap, note = read_mig_capture(text, "c.txt")
    assert cap.gpu_name == "NVIDIA H200" and len(cap.profiles) == 7
    # the CSV is no longer needed for the name: it is named as ignored, its lines shifted by 3
    assert note == (
        f"ignored: lines 4-24 (nvidia-smi), lines 63-64 ({MIG_OFF}), "
        "lines 66-68 (nvidia-smi --query-gpu)"
    )


def test_a_listing_saved_twice_is_read_once():
    lgip, lgipp = read("h200-mig-lgip.txt"), read("h200-mig-lgipp.txt")
    text = "$ nvidia-smi mig -lgip\n" + lgip + "$ nvidia-smi mig -lgip\n" + lgip + lgipp
    cap, note = read_mig_capture(text, "twice.txt")
    assert len(cap.profiles) == 7
    assert note == "ignored: lines 28-54 (nvidia-smi mig -lgip: a copy of lines 1-27)"


def test_a_bad_row_in_a_mixed_capture_names_the_files_line():
    lines = read("h200-capture-mixed.txt").splitlines()
    row = next(n for n, line in enumerate(lines) if "MIG 1g.35gb " in line)
    lines[row] = lines[row].replace("32.50", "32.5x")
    with pytest.raises(ValidationError) as err:
        model_from_capture("\n".join(lines) + "\n", "bad.txt")
    assert [(p.file, p.field) for p in err.value.problems] == [("bad.txt", f"line {row + 1}")]


def test_crlf_line_ends_read_the_same():
    text = read("h200-capture-mixed.txt")
    crlf = model_from_capture_note(text.replace("\n", "\r\n"), "c.txt")
    assert crlf[0].as_json() == model_from_capture(text, "c.txt").as_json()
    assert crlf[1] == f"ignored: lines 1-21 (nvidia-smi), lines 60-61 ({MIG_OFF})"


# ---- inspect ----------------------------------------------------------------------------------


def test_inspect_of_a_mixed_capture_reads_its_csv():
    f = NVSMI / "h200-capture-mixed.txt"
    rc, out, err = cli("gpu", "inspect", f, "--json")
    assert rc == 0, err
    assert err.splitlines() == [
        f"note: {f}: ignored: lines 1-21 (nvidia-smi), lines 23-49 (nvidia-smi mig -lgip), "
        f"lines 51-58 (nvidia-smi mig -lgipp), lines 60-61 ({MIG_OFF})"
    ]
    (gpu,) = json.loads(out)
    assert gpu["catalog"] == "H200-SXM" and gpu["pci_bus_id"] == "00000000:00:06.0"
    assert gpu["mig_mode_current"] == "Disabled" and gpu["driver_version"] == "580.159.04"


def test_inspect_merges_q_and_a_noheader_csv_of_one_gpu():
    gpus, note = inspect_gpus_note(read("h200-capture-esxi-prompt.txt"), "e.txt")
    (gpu,) = gpus  # one GPU: the -q section and the CSV row share its bus id
    assert gpu["virtualization_mode"] == "Pass-Through"  # only -q shows it
    assert gpu["catalog"] == "H200-SXM" and gpu["mig_change_pending"] is False
    assert note == (
        f"ignored: lines 1-2 ({MIG_OFF}), lines 5-12 (nvidia-smi mig -lgipp), "
        "lines 13-39 (nvidia-smi mig -lgip), lines 298-302 (nvidia-smi --version)"
    )


def test_inspect_reads_dash_L_and_q_x_wherever_they_are():
    text = read("h200-mig-lgip.txt") + "$ nvidia-smi -L\n" + DASH_L + read("h200-q.xml")
    gpus, note = inspect_gpus_note(text, "x.txt")
    (gpu,) = gpus  # -L's GPU is -q -x's: the same UUID
    assert gpu["catalog"] == "H200-SXM" and gpu["driver_version"] == "580.159.04"
    assert note == "ignored: lines 1-26 (nvidia-smi mig -lgip)"


def test_inspect_of_listings_only_is_refused_in_one_line():
    f = NVSMI / "a30-capture-mixed.txt"
    rc, out, err = cli("gpu", "inspect", f)
    assert rc == 2 and out == ""
    assert err.splitlines() == [
        f"error: {f}: (top): no nvidia-smi -q, -q -x, --query-gpu CSV or -L output in it; it "
        "holds: nvidia-smi mig -lgip (lines 1-18), nvidia-smi mig -lgipp (lines 20-24)"
    ]


# ---- nothing known: exit 2, one line, the content not shown ----------------------------------

SECRET = "Sekr3t-capture-5e1d"


@pytest.mark.parametrize("command", ["import-mig", "inspect"])
def test_a_file_of_unknown_text_is_refused_unshown(command, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text(f"$ uname -a\nLinux esxi 6.1\n\nmy notes, {SECRET}\n| {SECRET} |\n")
    rc, out, err = cli("gpu", command, f)
    assert rc == 2 and out == "" and SECRET not in err
    (line,) = err.splitlines()
    assert line.startswith(f"error: {f}: ") and "its content is not shown" in line


def test_nvidia_smi_output_without_listings_says_what_it_holds(tmp_path):
    f = tmp_path / "mig-off.txt"
    f.write_text(
        "$ nvidia-smi mig -lcip\n" + read("h200-mig-lcip.txt") + read("h200-nvidia-smi.txt")
    )
    rc, out, err = cli("gpu", "import-mig", f)
    assert rc == 2 and out == ""
    assert err.splitlines() == [
        f"error: {f}: (top): no nvidia-smi mig -lgip or -lgipp output in it; it holds: "
        f"{MIG_OFF} (lines 1-2), nvidia-smi (lines 3-22)"
    ]


# ---- sections, prompts and the note ------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "$ nvidia-smi mig -lgip",
        "# nvidia-smi mig -lgip",
        "[root@esxi:~] nvidia-smi mig -lgip",
        "root@gpu-vm:~# sudo /usr/bin/nvidia-smi mig -lgip",
        "user@host:~$ nvidia-smi mig -lgip -i 0",
        "nvidia-smi mig -lgip",
    ],
)
def test_prompt_forms_belong_to_the_output_after_them(prompt):
    lgipp = prompt.replace("-lgip", "-lgipp")
    text = f"{prompt}\n{read('h200-mig-lgip.txt')}{lgipp}\n{read('h200-mig-lgipp.txt')}"
    sections = split_capture(text)
    assert [(s.kind, s.first, s.start) for s in sections] == [("lgip", 1, 2), ("lgipp", 28, 29)]
    assert read_mig_capture(text, "p.txt")[1] is None


def test_the_note_names_commands_by_their_flags_never_their_values():
    text = (
        f"$ nvidia-smi topo -m --x={SECRET}\nGPU0 X {SECRET}\n"
        + read("h200-mig-lgip.txt")
        + read("h200-mig-lgipp.txt")
        + f"$ nvidia-smi -i {SECRET}\n"
    )
    note = read_mig_capture(text, "t.txt")[1]
    assert note == (
        "ignored: lines 1-2 (nvidia-smi topo -m --x: output not recognised), "
        "line 36 (nvidia-smi -i (no output))"
    )


def test_the_note_stays_one_bounded_line():
    chunk = "Segmentation fault\n" + read("h200-mig-lgipp.txt")
    text = read("h200-mig-lgip.txt") + chunk * 40
    cap, note = read_mig_capture(text, "many.txt")
    assert len(cap.profiles) == 7
    assert "\n" not in note and note.endswith(", and 67 more") and len(note) < 1200
