"""Helpers shared by miglab's controller-side filter plugins."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def plain(value):
    """Ansible's tagged/lazy containers as plain dicts, lists and strings (for the miglab core)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def require(lib, family: str, error: Exception | None):
    """``lib`` (a miglab module or function), or a clear error when miglab is not installed."""
    if lib is None:
        raise AnsibleFilterError(
            f"miglab.lab.{family}_* filters need the miglab Python package on the controller "
            f"(pip install -e <miglab checkout>): {error}"
        )
    return lib
