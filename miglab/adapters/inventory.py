"""The lab a campaign runs on, read from an Ansible YAML inventory (core: no Ansible import).

ESXi hosts are the members of the group ``esxi_hosts``; each describes its hardware with
``miglab_host_*`` variables (host vars, group vars of ``esxi_hosts`` or ``all``, inline or in the
inventory folder's ``group_vars/`` and ``host_vars/``)::

    all:
      children:
        esxi_hosts:
          hosts:
            esxi-01.lab.example:
              miglab_host_gpus: [{model: A100-PCIE-80GB, count: 4}]
              miglab_host_cpus: 128            # logical CPUs
              miglab_host_memory_gb: 1024
          vars:
            miglab_host_cpu_overcommit: 2.0    # vCPUs per logical CPU a single scenario may use
            miglab_host_memory_reserved_gb: 32 # kept for ESXi

The lab settings the playbooks use (the vCenter connection ``miglab_vcenter``, the host driver
bundle's URL) are checked too, where they are written (:mod:`miglab.core.labvars`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path

from miglab.core import labvars, schema
from miglab.core.campaign import Campaign, check_fits, load_campaign
from miglab.core.catalog import Catalog, UnknownName, load_catalog
from miglab.core.placement import Host, Lab
from miglab.errors import Problems, ValidationError
from miglab.formats import yamlio

HOST_GROUP = "esxi_hosts"
GROUP_KEYS = ("hosts", "children", "vars")  # what Ansible's YAML inventory reads in a group
HOST_VARS = {
    "miglab_host_gpus": None,
    "miglab_host_cpus": None,
    "miglab_host_memory_gb": None,
    "miglab_host_cpu_overcommit": 2.0,
    "miglab_host_memory_reserved_gb": 32,
}
# Sanity bounds far above any ESXi host (vSphere 8: 896 logical CPUs, 24 TB): beyond them a
# number is a typo, and the capacity arithmetic stays finite.
MAX_HOST_CPUS = 100_000
MAX_HOST_MEMORY_GB = 10_000_000
MAX_CPU_OVERCOMMIT = 1_000.0
DEFAULT_INVENTORY = Path(__file__).resolve().parents[2] / "inventories" / "sim"


def _inventory_file(path: Path) -> Path:
    if path.is_dir():
        for name in ("hosts.yml", "hosts.yaml", "inventory.yml", "inventory.yaml"):
            if (path / name).is_file():
                return path / name
        # Otherwise the folder's one YAML inventory, whatever its name. Inventory plugin
        # configurations (e.g. miglab.lab.campaign_vms's: a top-level 'plugin' key) are not the
        # lab; among other YAML files (a campaign, say), the one with a top-level 'all' group is.
        found = {
            f: _top_keys(f)
            for f in sorted(path.iterdir())
            if f.suffix in (".yml", ".yaml") and f.is_file()
        }
        found = {f: keys for f, keys in found.items() if "plugin" not in keys}
        inventories = [f for f, keys in found.items() if "all" in keys]
        if len(inventories) == 1:
            return inventories[0]
        if len(found) == 1:
            return next(iter(found))
    return path


def _top_keys(f: Path) -> set:
    """The top-level keys of a YAML file (none when it is not a mapping or cannot be read)."""
    data = yamlio.load_file(f, Problems(str(f)), ansible=True)
    return set(data) if isinstance(data, dict) else set()


def _read_vars_dir(folder: Path, name: str, problems_out: list[Problems], env: Mapping) -> dict:
    """Variables of ``name`` from ``folder/name.yml`` or every YAML file of ``folder/name/``
    (as Ansible reads group_vars and host_vars). Vault-encrypted files are skipped: miglab's
    lab variables are never secret (a vault-encrypted value inside a file is accepted)."""
    files = [folder / f"{name}.{ext}" for ext in ("yml", "yaml")]
    if (folder / name).is_dir():
        files += sorted(f for f in (folder / name).iterdir() if f.suffix in (".yml", ".yaml"))
    merged: dict = {}
    for f in files:
        if not f.is_file() or _is_vault_file(f):
            continue
        p = Problems(str(f))
        data = yamlio.load_file(f, p, ansible=True)
        problems_out.append(p)
        if data is None:
            continue
        data = _variables(data, "", p)
        labvars.check(data, "", p, env)
        merged.update(data)
    return merged


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
    group, name: str, inherited: dict, out: dict, path: str, problems: Problems, env: Mapping
):
    """Collect host -> merged vars for hosts under the esxi_hosts group (at any depth); check
    the structure of every group on the way and the lab settings of every group and host."""
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
            hint = difflib.get_close_matches(str(key), GROUP_KEYS, n=1)
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
    labvars.check(own, f"{path}.vars.", problems, env)
    gvars = dict(inherited)
    gvars.update(own)
    hosts = group.get("hosts") or {}
    if not isinstance(hosts, dict):
        problems.add(
            f"{path}.hosts", f"must be a mapping of host names, got {schema.type_name(hosts)}"
        )
        hosts = {}
    for host, hvars in hosts.items():
        field = f"{path}.hosts.{host}"
        if hvars is not None and not isinstance(hvars, dict):
            problems.add(
                field, f"must be a mapping of the host's variables, got {schema.type_name(hvars)}"
            )
            continue
        hvars = _variables(hvars, field, problems)
        labvars.check(hvars, f"{field}.", problems, env)
        if name == HOST_GROUP:
            merged = dict(gvars)
            merged.update(hvars)
            out[str(host)] = (merged, field)
    children = group.get("children") or {}
    if not isinstance(children, dict):
        problems.add(
            f"{path}.children",
            f"must be a mapping of group names, got {schema.type_name(children)}",
        )
        return
    for child, body in children.items():
        _find_hosts(body, str(child), gvars, out, f"{path}.children.{child}", problems, env)


def load_lab(
    path: str | Path | None = None, catalog: Catalog | None = None, env: Mapping | None = None
) -> Lab:
    """Read the lab's ESXi hosts from an inventory file or folder; raises ValidationError.
    ``env`` (default: the process environment) may give the vCenter credentials
    (``VMWARE_HOST``, ``VMWARE_USER``, ``VMWARE_PASSWORD``) that ``miglab_vcenter`` leaves out."""
    catalog = catalog or load_catalog()
    env = os.environ if env is None else env
    inv_path = Path(path) if path else DEFAULT_INVENTORY
    if not inv_path.exists():
        p = Problems(str(inv_path))
        p.add("", "inventory not found")
        p.raise_if_any()
    inv_file = _inventory_file(inv_path)
    problems = Problems(str(inv_file))
    data = yamlio.load_file(inv_file, problems, ansible=True)
    problems.raise_if_any()
    if not isinstance(data, dict) or "all" not in data:
        problems.add("all", "a YAML inventory with a top-level 'all' group is required")
        problems.raise_if_any()

    folder = inv_file.parent
    extra: list[Problems] = []
    all_vars = dict(_read_vars_dir(folder / "group_vars", "all", extra, env))
    group_vars = _read_vars_dir(folder / "group_vars", HOST_GROUP, extra, env)

    found: dict[str, tuple[dict, str]] = {}
    _find_hosts(data["all"], "all", all_vars, found, "all", problems, env)
    hosts = []
    for name, (hvars, field) in found.items():
        merged = dict(group_vars)
        merged.update(hvars)
        merged.update(_read_vars_dir(folder / "host_vars", name, extra, env))
        host = _host(name, merged, field, problems, catalog)
        if host:
            hosts.append(host)
    for p in extra:
        problems.items.extend(p.items)
    if not found and not problems:
        problems.add(f"all.children.{HOST_GROUP}", "no ESXi hosts: the group has no hosts")
    problems.raise_if_any()
    return Lab(tuple(hosts), name=inv_path.name, source=str(inv_path))


def _host(name: str, hvars: dict, field: str, problems: Problems, catalog: Catalog) -> Host | None:
    values = {k: hvars.get(k, default) for k, default in HOST_VARS.items()}
    for key in hvars:
        if isinstance(key, str) and key.startswith("miglab_host_") and key not in HOST_VARS:
            hint = difflib.get_close_matches(key, list(HOST_VARS), n=1)
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
    cpus = schema.integer(
        values["miglab_host_cpus"],
        f"{field}.miglab_host_cpus",
        problems,
        minimum=1,
        maximum=MAX_HOST_CPUS,
    )
    mem = schema.integer(
        values["miglab_host_memory_gb"],
        f"{field}.miglab_host_memory_gb",
        problems,
        minimum=1,
        maximum=MAX_HOST_MEMORY_GB,
    )
    over = schema.number(
        values["miglab_host_cpu_overcommit"],
        f"{field}.miglab_host_cpu_overcommit",
        problems,
        minimum=1.0,
        maximum=MAX_CPU_OVERCOMMIT,
    )
    reserved = schema.integer(
        values["miglab_host_memory_reserved_gb"],
        f"{field}.miglab_host_memory_reserved_gb",
        problems,
        minimum=0,
        maximum=MAX_HOST_MEMORY_GB,
    )
    if mem is not None and reserved is not None and reserved >= mem:
        problems.add(
            f"{field}.miglab_host_memory_reserved_gb",
            f"{reserved} GB reserved leaves nothing of {mem} GB for VMs",
        )
        return None
    if None in (cpus, mem, over, reserved) or not gpus:
        return None
    return Host(name, tuple(gpus), cpus, mem, over, reserved)


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
    return campaign, lab
