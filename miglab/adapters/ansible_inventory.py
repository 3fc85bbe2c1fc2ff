"""Host variables exactly as ``ansible-playbook`` sees them: ansible-core's own InventoryManager,
VariableManager and Templar over the lab's inventory sources.

So ``miglab validate``/``plan`` check the values the playbooks will use: hosts of child groups
(racks under ``esxi_hosts``), every ``group_vars``/``host_vars`` form Ansible reads (``.yml``,
``.yaml``, ``.json``, no extension, folders), Ansible's precedence (a ``group_vars`` file beats the
inventory's inline group vars; a child group beats its parent; host vars beat both), several
inventory files, and vault (with the vault password Ansible is configured with:
``ANSIBLE_VAULT_PASSWORD_FILE`` or ``vault_password_file`` in ansible.cfg; without one, vault-
encrypted vars files are left out, as miglab's own lab variables are never secret).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

VAULT_HEADER = b"$ANSIBLE_VAULT"


class InventoryReadError(Exception):
    """Ansible could not read an inventory source (one line, no file contents)."""


_plugins_ready = False


def _init_plugins() -> None:
    """What Ansible's own commands do first: the collection loader (ansible.builtin.yaml is a
    collection plugin too), once per process."""
    global _plugins_ready
    if _plugins_ready:
        return
    from ansible.plugins.loader import init_plugin_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    # Inside ansible-playbook (the campaign_vms inventory plugin) it is configured already.
    if AnsibleCollectionConfig.collection_finder is None:
        init_plugin_loader()
    _plugins_ready = True


def collection_path(name: str) -> Path | None:
    """The folder Ansible loads the collection ``name`` from (its configured collections paths,
    as ansible-playbook sees them), or None when it is not installed."""
    import importlib

    _init_plugins()
    try:
        module = importlib.import_module(f"ansible_collections.{name}")
    except ImportError:
        return None
    return Path(next(iter(module.__path__)))


def _loader():
    from ansible import constants as C
    from ansible.parsing.dataloader import DataLoader
    from ansible.parsing.vault import get_file_vault_secret

    # Read now, not at ansible.constants' import: the environment may have changed since.
    password_file = C.config.get_config_value("DEFAULT_VAULT_PASSWORD_FILE")
    if password_file:
        loader = DataLoader()
        secret = get_file_vault_secret(filename=password_file, vault_id="default", loader=loader)
        secret.load()
        loader.set_vault_secrets([("default", secret)])
        return loader, []

    skipped: list[str] = []

    class VaultlessLoader(DataLoader):
        """Reads a vault-encrypted vars file as empty (no password to open it with)."""

        def load_from_file(self, file_name, *args, **kwargs):
            try:
                with open(file_name, "rb") as fh:
                    if fh.read(len(VAULT_HEADER)) == VAULT_HEADER:
                        skipped.append(str(file_name))
                        return {}
            except OSError:
                pass
            return super().load_from_file(file_name, *args, **kwargs)

    return VaultlessLoader(), skipped


def group_host_vars(
    sources: Iterable[Path], group: str, prefix: str
) -> dict[str, dict[str, object]]:
    """For every host of ``group`` (its child groups included), its variables whose names start
    with ``prefix``, templated as a play would see them, in the inventory's host order."""
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    _init_plugins()
    loader, _skipped = _loader()
    try:
        inventory = InventoryManager(loader=loader, sources=[str(s) for s in sources])
    except AnsibleError as exc:
        raise InventoryReadError(_first_line(exc)) from None
    variables = VariableManager(loader=loader, inventory=inventory)
    if group not in inventory.groups:
        return {}
    out: dict[str, dict[str, object]] = {}
    for host in inventory.groups[group].get_hosts():
        try:
            hvars = variables.get_vars(host=host, include_hostvars=False)
        except AnsibleError as exc:
            raise InventoryReadError(f"{host.name}: {_first_line(exc)}") from None
        templar = Templar(loader=loader, variables=hvars)
        picked = {}
        for key in sorted(k for k in hvars if isinstance(k, str) and k.startswith(prefix)):
            try:
                picked[key] = _plain(templar.template(hvars[key]))
            except AnsibleError as exc:
                raise InventoryReadError(f"{host.name}: {key}: {_first_line(exc)}") from None
        out[host.name] = picked
    return out


def _first_line(exc: Exception) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _plain(value):
    """Ansible's YAML types (AnsibleUnicode, AnsibleSequence, ...) as plain Python values."""
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    return value
