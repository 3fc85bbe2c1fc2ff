"""The guests' wheel (miglab.adapters.guest_wheel): which source it is made from, and when a wheel
built before is reused. Packing an installed wheel: tests/e2e/test_installed.py."""

from __future__ import annotations

import json

from miglab.adapters import guest_wheel


def _source(tmp_path):
    src = tmp_path / "src"
    (src / "miglab" / "sub").mkdir(parents=True)
    (src / "pyproject.toml").write_text("[project]\nname = 'miglab'\n")
    (src / "README.md").write_text("r\n")
    (src / "miglab" / "__init__.py").write_text("")
    (src / "miglab" / "sub" / "x.py").write_text("X = 1\n")
    return src


def test_the_key_follows_the_sources_and_the_build_arguments_not_caches(tmp_path):
    src = _source(tmp_path)
    key = guest_wheel.source_key(src, [])
    assert guest_wheel.source_key(src, []) == key
    cache = src / "miglab" / "sub" / "__pycache__"
    cache.mkdir()
    (cache / "x.cpython-311.pyc").write_bytes(b"\0")
    assert guest_wheel.source_key(src, []) == key  # bytecode is not a source
    assert guest_wheel.source_key(src, ["--no-build-isolation"]) != key
    (src / "miglab" / "sub" / "x.py").write_text("X = 2\n")
    assert guest_wheel.source_key(src, []) != key


def test_a_wheel_built_from_the_same_sources_is_reused(tmp_path, monkeypatch):
    src, dest = _source(tmp_path), tmp_path / "cache"
    dest.mkdir()
    builds = []

    def fake_run(cmd, **kwargs):
        builds.append(cmd)
        (dest / "miglab-0.1.0-py3-none-any.whl").write_bytes(b"wheel")

        class Done:
            returncode, stdout, stderr = 0, "", ""

        return Done()

    monkeypatch.setattr(guest_wheel.subprocess, "run", fake_run)
    first = guest_wheel.guest_wheel(dest, src)
    assert guest_wheel.guest_wheel(dest, src) == first and len(builds) == 1
    (src / "miglab" / "sub" / "x.py").write_text("X = 3\n")
    assert guest_wheel.guest_wheel(dest, src) == first and len(builds) == 2
    assert builds[0][-1] == str(src) and "--no-deps" in builds[0]


def test_only_an_editable_install_points_at_a_source_folder(tmp_path, monkeypatch):
    src = _source(tmp_path)

    class Dist:
        def __init__(self, info):
            self.info = info

        def read_text(self, name):
            return json.dumps(self.info) if self.info is not None else None

    def with_info(info):
        monkeypatch.setattr(guest_wheel.metadata, "distribution", lambda name: Dist(info))
        return guest_wheel.editable_source()

    assert with_info({"url": src.as_uri(), "dir_info": {"editable": True}}) == src
    assert with_info({"url": src.as_uri(), "dir_info": {}}) is None  # `pip install .`: installed
    assert with_info(None) is None  # a wheel from an index or a file
    assert with_info({"url": (tmp_path / "gone").as_uri(), "dir_info": {"editable": True}}) is None
