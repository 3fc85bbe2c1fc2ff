"""Module documentation matches the code (what ansible-test's validate-modules checks most):
DOCUMENTATION/EXAMPLES/RETURN parse, every option of argument_spec is documented with the same
type/default/choices and vice versa (doc fragments included), and no_log on secrets."""

from __future__ import annotations

import pytest
import yaml

from testlib import ROOT, collection_module

MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))


class _Captured(Exception):
    def __init__(self, kwargs):
        self.kwargs = kwargs


def _spec_of(name: str) -> dict:
    """The module and its argument spec; an action plugin's (``ARGS``) when the module file only
    documents it."""
    mod = collection_module(f"plugins.modules.{name}")
    if (ROOT / "plugins" / "action" / f"{name}.py").is_file():
        return mod, collection_module(f"plugins.action.{name}").ARGS

    def fake(**kwargs):
        raise _Captured(kwargs)

    orig = mod.AnsibleModule
    mod.AnsibleModule = fake
    try:
        mod.main()
    except _Captured as cap:
        return mod, cap.kwargs["argument_spec"]
    finally:
        mod.AnsibleModule = orig
    raise AssertionError(f"{name}.main() did not build an AnsibleModule")


def _documented_options(doc: dict) -> dict:
    options = dict(doc.get("options") or {})
    for frag in doc.get("extends_documentation_fragment") or []:
        assert frag.startswith("miglab.lab."), frag
        fname = frag.split(".")[-1]
        fmod = collection_module(f"plugins.doc_fragments.{fname}")
        options.update(yaml.safe_load(fmod.ModuleDocFragment.DOCUMENTATION)["options"])
    return options


@pytest.mark.parametrize("name", MODULES)
def test_module_docs_match_argument_spec(name):
    mod, spec = _spec_of(name)
    doc = yaml.safe_load(mod.DOCUMENTATION)
    assert doc["module"] == name
    assert doc["short_description"] and doc["description"]
    assert isinstance(yaml.safe_load(mod.EXAMPLES), list)
    assert isinstance(yaml.safe_load(mod.RETURN), dict)
    assert f"miglab.lab.{name}" in mod.EXAMPLES, "examples use the FQCN"
    options = _documented_options(doc)
    assert set(options) == set(spec), set(options) ^ set(spec)
    for opt, arg in spec.items():
        d = options[opt]
        assert d.get("type", "str") == arg.get("type", "str"), opt
        assert d.get("default") == arg.get("default"), opt
        assert d.get("choices") == arg.get("choices"), opt
        assert bool(d.get("required")) == bool(arg.get("required")), opt
        assert d.get("elements") == arg.get("elements"), opt
        assert sorted(d.get("aliases") or []) == sorted(arg.get("aliases") or []), opt
        if opt in ("password", "token"):
            assert arg.get("no_log") is True


def test_the_vmware_action_group_lists_every_vcenter_module():
    """meta/runtime.yml's group miglab.lab.vmware holds exactly the modules that take the vCenter
    connection (doc fragment miglab.lab.vmware), so `module_defaults` reaches all of them."""
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    group = sorted(runtime["action_groups"]["vmware"])
    vcenter_modules = sorted(
        name
        for name in MODULES
        if "miglab.lab.vmware" in (ROOT / "plugins" / "modules" / f"{name}.py").read_text()
        and "extends_documentation_fragment"
        in (ROOT / "plugins" / "modules" / f"{name}.py").read_text()
    )
    assert group == vcenter_modules


def test_playbooks_set_the_vcenter_connection_once_per_play():
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    vcenter = set(runtime["action_groups"]["vmware"])
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()) or []:
            tasks = [sub for t in play.get("tasks", []) for sub in [t, *t.get("block", [])]]
            vcenter_tasks = [
                t for t in tasks if any(k.removeprefix("miglab.lab.") in vcenter for k in t)
            ]
            for task in vcenter_tasks:
                module = next(k for k in task if k.startswith("miglab.lab."))
                assert "hostname" not in (task[module] or {}), (path.name, task.get("name"))
            if vcenter_tasks:
                defaults = play.get("module_defaults", {})
                assert "group/miglab.lab.vmware" in defaults, (path.name, play["name"])


@pytest.mark.parametrize("path", sorted((ROOT / "plugins" / "lookup").glob("*.py")), ids=str)
def test_lookup_docs_parse_and_name_the_plugin(path):
    mod = collection_module(f"plugins.lookup.{path.stem}")
    doc = yaml.safe_load(mod.DOCUMENTATION)
    assert doc["name"] == path.stem and doc["short_description"]
    assert isinstance(yaml.safe_load(mod.EXAMPLES), list)
    assert "_raw" in yaml.safe_load(mod.RETURN)
