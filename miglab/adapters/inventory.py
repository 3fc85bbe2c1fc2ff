"""The lab a campaign runs on, read from an Ansible YAML inventory.

ESXi hosts are the members of the group ``esxi_hosts`` (its child groups included); each
describes its hardware with ``miglab_host_*`` variables, wherever Ansible reads variables from::

    all:
      children:
        esxi_hosts:
          hosts:
            esxi-01.lab.example:
              miglab_host_gpus: [{model: A100-PCIE-80GB, count: 4}]
              miglab_host_cpus: 128            # logical CPUs
              miglab_host_memory_gb: 1024
              miglab_host_esxi_version: "8.0.3" # optional: the ESXi release it runs
          vars:
            miglab_host_cpu_overcommit: 2.0    # vCPUs per logical CPU a single scenario may use
            miglab_host_memory_reserved_gb: 32 # kept for ESXi

Two passes. First every file is read strictly, so a problem names its file and field: the
inventory files' structure (groups: hosts, children, vars) and every vars file under
``group_vars/`` and ``host_vars/``, with the lab settings the playbooks use (the vCenter
connection ``miglab_vcenter``, the host driver bundle's URL; :mod:`miglab.core.labvars`) checked
where they are written. Then the hosts' values come from ansible-core itself
(:mod:`miglab.adapters.ansible_inventory`), so validation sees what ``ansible-playbook`` sees.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from miglab.adapters.ansible_inventory import InventoryReadError, group_host_vars
from miglab.adapters.project import default_inventory
from miglab.core import labvars, schema
from miglab.core.campaign import Campaign, check_fits, load_campaign, version_notes
from miglab.core.catalog import Catalog, UnknownName, load_catalog
from miglab.core.placement import Host, Lab
from miglab.core.vgpu_versions import DRIVER_VAR, ESXI_VAR, driver_branch, parse_vsphere
from miglab.errors import Problems, ValidationError
from miglab.formats import yamlio

HOST_GROUP = "esxi_hosts"
HOST_PREFIX = "miglab_host_"
YAML_EXTS = (".yml", ".yaml")
VARS_EXTS = (".yml", ".yaml", ".json")  # and no extension: Ansible's YAML_FILENAME_EXTENSIONS
GROUP_KEYS = ("hosts", "children", "vars")  # what Ansible's YAML inventory reads in a group
HOST_VARS = {
    "miglab_host_gpus": None,
    "miglab_host_cpus": None,
    "miglab_host_memory_gb": None,
    "miglab_host_cpu_overcommit": 2.0,
    "miglab_host_memory_reserved_gb": 32,
    ESXI_VAR: None,  # the ESXi release the host runs ("8.0.3"); unset: not known
}
# Sanity bounds far above any ESXi host (vSphere 8: 896 logical CPUs, 24 TB): beyond them a
# number is a typo, and the capacity arithmetic stays finite.
MAX_HOST_CPUS = 100_000
MAX_HOST_MEMORY_GB = 10_000_000
MAX_CPU_OVERCOMMIT = 1_000.0


def _inventory_sources(path: Path) -> list[Path]:
    """The lab's YAML inventory files: ``path`` itself, or in a folder every YAML file with a
    top-level ``all`` group. Inventory plugin configurations (a top-level ``plugin`` key, e.g.
    miglab.lab.campaign_vms's) are not the lab; nor are other YAML files (a campaign, say). A
    folder without an ``all`` file but with one YAML file: that file (its errors are reported)."""
    if not path.is_dir():
        return [path]
    found = {
        f: _top_keys(f) for f in sorted(path.iterdir()) if f.suffix in YAML_EXTS and f.is_file()
    }
    found = {f: keys for f, keys in found.items() if "plugin" not in keys}
    inventories = [f for f, keys in found.items() if "all" in keys]
    if inventories:
        return inventories
    if len(found) == 1:
        return list(found)
    return [path]


def _top_keys(f: Path) -> set:
    """The top-level keys of a YAML file (none when it is not a mapping or cannot be read)."""
    data = yamlio.load_file(f, Problems(str(f)), ansible=True)
    return set(data) if isinstance(data, dict) else set()


def _vars_files(folder: Path) -> list[Path]:
    """Every file Ansible's host_group_vars plugin reads under ``folder`` (group_vars/ or
    host_vars/): NAME, NAME.yml, NAME.yaml, NAME.json, and the same inside NAME/ folders at any
    depth; hidden files and other extensions are not read."""
    if not folder.is_dir():
        return []
    out = []
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not f.is_file():
            continue
        if f.suffix in VARS_EXTS or (f.suffix == "" and "." not in f.name):
            out.append(f)
    return out


def _check_vars_files(
    folder: Path, problems_out: list[Problems], env: Mapping, scopes: list | None = None
) -> None:
    """Read every vars file strictly (YAML errors, a mapping of variables, the lab settings).
    Vault-encrypted files are left to Ansible (miglab's own lab variables are never secret)."""
    for sub in ("group_vars", "host_vars"):
        for f in _vars_files(folder / sub):
            if _is_vault_file(f):
                continue
            p = Problems(str(f))
            data = yamlio.load_file(f, p, ansible=True)
            problems_out.append(p)
            if data is None:
                continue
            data = _variables(data, "", p)
            labvars.check(data, "", p, env, scopes)


def _is_vault_file(f: Path) -> bool:
    try:
        with f.open("rb") as fh:
            return fh.read(14) == b"$ANSIBLE_VAULT"
    except OSError:
        return False  # reading it again reports why


def _variables(value, field: str, problems: Problems) -> dict:
    """A mapping of variables (nothing is an empty one); problems for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(field, f"must be a mapping of variables, got {schema.type_name(value)}")
        return {}
    out = {}
    for key, v in value.items():
        if isinstance(key, str):
            out[key] = v
        else:
            problems.add(field, f"variable name {key!r} must be a string")
    return out


def _find_hosts(
    group,
    name: str,
    under: bool,
    out: dict,
    path: str,
    problems: Problems,
    env: Mapping,
    scopes: list | None = None,
):
    """Collect host -> field for the hosts of the esxi_hosts group and its children (``under``);
    check the structure of every group on the way and the lab settings of every group and host."""
    if group is None:
        return
    if not isinstance(group, dict):
        problems.add(
            path,
            f"group {name!r} must be a mapping of hosts, children and vars, "
            f"got {schema.type_name(group)}",
        )
        return
    for key in group:
        if key not in GROUP_KEYS:
            hint = schema.close_matches(str(key), GROUP_KEYS)
            problems.add(
                f"{path}.{key}",
                "unknown key in a group"
                + (
                    f"; did you mean {hint[0]!r}?"
                    if hint
                    else "; a group has hosts, children, vars"
                ),
            )
    own = _variables(group.get("vars"), f"{path}.vars", problems)
    labvars.check(own, f"{path}.vars.", problems, env, scopes)
    under = under or name == HOST_GROUP
    hosts = group.get("hosts") or {}
    if not isinstance(hosts, dict):
        problems.add(
            f"{path}.hosts", f"must be a mapping of host names, got {schema.type_name(hosts)}"
        )
        hosts = {}
    for host, hvars in hosts.items():
        field = f"{path}.hosts.{host}"
        if not labvars.check_inventory_name(host, "host", field, problems):
            continue
        if hvars is not None and not isinstance(hvars, dict):
            problems.add(
                field, f"must be a mapping of the host's variables, got {schema.type_name(hvars)}"
            )
            continue
        hvars = _variables(hvars, field, problems)
        labvars.check(hvars, f"{field}.", problems, env, scopes)
        if under:
            out.setdefault(str(host), (problems, field))
    children = group.get("children") or {}
    if not isinstance(children, dict):
        problems.add(
            f"{path}.children",
            f"must be a mapping of group names, got {schema.type_name(children)}",
        )
        return
    for child, body in children.items():
        if labvars.check_inventory_name(child, "group", f"{path}.children.{child}", problems):
            _find_hosts(
                body, str(child), under, out, f"{path}.children.{child}", problems, env, scopes
            )


def load_lab(
    path: str | Path | None = None, catalog: Catalog | None = None, env: Mapping | None = None
) -> Lab:
    """Read the lab's ESXi hosts from an inventory file or folder; raises ValidationError.
    ``env`` (default: the process environment) may give the vCenter credentials
    (``VMWARE_HOST``, ``VMWARE_USER``, ``VMWARE_PASSWORD``) that ``miglab_vcenter`` leaves out."""
    catalog = catalog or load_catalog()
    env = os.environ if env is None else env
    inv_path = Path(path) if path else default_inventory()
    if not inv_path.exists():
        p = Problems(str(inv_path))
        p.add("", "inventory not found")
        p.raise_if_any()
    sources = _inventory_sources(inv_path)
    found: dict[str, tuple[Problems, str]] = {}
    checked: list[Problems] = []
    scopes: list = []  # every scope's variables, for checks across scopes (labvars)
    for source in sources:
        problems = Problems(str(source))
        checked.append(problems)
        data = yamlio.load_file(source, problems, ansible=True)
        if problems:
            continue
        if not isinstance(data, dict) or "all" not in data:
            problems.add("all", "a YAML inventory with a top-level 'all' group is required")
            continue
        _find_hosts(data["all"], "all", False, found, "all", problems, env, scopes)
    for folder in dict.fromkeys(s.parent for s in sources):
        _check_vars_files(folder, checked, env, scopes)
    labvars.check_guest_licensing(scopes)
    _raise_if_any(checked)

    first = checked[0]
    try:
        resolved = group_host_vars(sources, HOST_GROUP, HOST_PREFIX)
    except InventoryReadError as exc:
        first.add("", f"Ansible cannot read the inventory: {exc}")
        first.raise_if_any()
    drivers = _driver_versions(sources)
    hosts = []
    for name, hvars in resolved.items():
        problems, field = found.get(name, (first, f"hosts.{name}"))
        host = _host(name, hvars, field, problems, catalog, drivers.get(name))
        if host:
            hosts.append(host)
    if not resolved and not any(checked):
        first.add(f"all.children.{HOST_GROUP}", "no ESXi hosts: the group has no hosts")
    _raise_if_any(checked)
    return Lab(tuple(hosts), name=inv_path.name, source=str(inv_path))


def _driver_versions(sources: list[Path]) -> dict[str, str]:
    """Each host's NVIDIA host driver version (``esxi_vgpu_driver_version``) as the playbooks
    will see it, for the vGPU version gate; hosts whose value is unset, not a driver version or
    not known before the play runs (a lookup Ansible cannot resolve now, e.g. the simulated
    lab's bundle before ``miglab sim up``) are left out: their vGPU software release is not
    known and not judged."""
    try:
        found = group_host_vars(sources, HOST_GROUP, DRIVER_VAR)
    except InventoryReadError:
        return {}
    out = {}
    for name, hvars in found.items():
        value = hvars.get(DRIVER_VAR)
        if driver_branch(value) is not None:
            out[name] = str(value).strip()
    return out


def _raise_if_any(problems: list[Problems]) -> None:
    items = [item for p in problems for item in p.items]
    if items:
        raise ValidationError(items)


# the host's numeric values: (variable, check, minimum, maximum), in Host's order
_HOST_NUMBERS = (
    ("miglab_host_cpus", schema.integer, 1, MAX_HOST_CPUS),
    ("miglab_host_memory_gb", schema.integer, 1, MAX_HOST_MEMORY_GB),
    ("miglab_host_cpu_overcommit", schema.number, 1.0, MAX_CPU_OVERCOMMIT),
    ("miglab_host_memory_reserved_gb", schema.integer, 0, MAX_HOST_MEMORY_GB),
)


def _host(
    name: str,
    hvars: dict,
    field: str,
    problems: Problems,
    catalog: Catalog,
    driver_version: str | None = None,
) -> Host | None:
    values = {k: hvars.get(k, default) for k, default in HOST_VARS.items()}
    for key in hvars:
        if isinstance(key, str) and key.startswith("miglab_host_") and key not in HOST_VARS:
            hint = schema.close_matches(key, list(HOST_VARS))
            problems.add(
                f"{field}.{key}",
                "unknown variable" + (f"; did you mean {hint[0]!r}?" if hint else ""),
            )
    ok = True
    for key in ("miglab_host_gpus", "miglab_host_cpus", "miglab_host_memory_gb"):
        if values[key] is None:
            problems.add(f"{field}.{key}", "is required")
            ok = False
    if not ok:
        return None
    gpus = []
    raw = values["miglab_host_gpus"]
    if not isinstance(raw, list) or not raw:
        problems.add(f"{field}.miglab_host_gpus", "must be a non-empty list of {model, count}")
        return None
    for i, item in enumerate(raw):
        path = f"{field}.miglab_host_gpus[{i}]"
        if isinstance(item, str):
            item = {"model": item, "count": 1}
        if schema.mapping(item, path, problems, required=["model"], optional=["count"]) is None:
            continue
        count = schema.integer(
            item.get("count", 1), f"{path}.count", problems, minimum=1, maximum=64
        )
        try:
            model = catalog.get(str(item.get("model")))
        except UnknownName as exc:
            problems.add(f"{path}.model", str(exc))
            continue
        if count:
            gpus.extend([model] * count)
    cpus, mem, over, reserved = (
        check(values[key], f"{field}.{key}", problems, minimum=low, maximum=high)
        for key, check, low, high in _HOST_NUMBERS
    )
    if mem is not None and reserved is not None and reserved >= mem:
        problems.add(
            f"{field}.miglab_host_memory_reserved_gb",
            f"{reserved} GB reserved leaves nothing of {mem} GB for VMs",
        )
        return None
    esxi = values[ESXI_VAR]
    if esxi is not None:
        try:
            parse_vsphere(esxi)
            esxi = str(esxi).strip()
        except ValueError:
            problems.add(
                f"{field}.{ESXI_VAR}",
                f'{esxi!r} is not an ESXi release: write it like "8.0.3" (8.0 Update 3) or "7.0.2"',
            )
            return None
    if None in (cpus, mem, over, reserved) or not gpus:
        return None
    return Host(name, tuple(gpus), cpus, mem, over, reserved, esxi, driver_version)


def load_checked(campaign_path: str | Path, inventory: str | Path | None) -> tuple[Campaign, Lab]:
    """Validate the campaign and the lab inventory (all problems of both at once), then check
    that every scenario fits the lab. The campaign is read first: a GPU it imports from an
    nvidia-smi capture (``gpu_capture``) is then known to the inventory too."""
    problems = []
    campaign = lab = None
    try:
        campaign = load_campaign(campaign_path)
    except ValidationError as exc:
        problems.extend(exc.problems)
    try:
        lab = load_lab(inventory)
    except ValidationError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ValidationError(problems)
    check_fits(campaign, lab)
    notes = version_notes(campaign, lab)  # vGPU minimums it could not check: said, not refused
    if notes:
        campaign = replace(campaign, warnings=campaign.warnings + tuple(notes))
    return campaign, lab
