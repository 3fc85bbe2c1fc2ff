"""Shared connection options (community.vmware-compatible, with environment fallbacks) and the
small glue every miglab vSphere module uses: connect once, map errors to fail_json."""

from __future__ import annotations

import contextlib

from ansible.module_utils.basic import env_fallback, missing_required_lib

try:
    from miglab.adapters.vsphere.connection import ConnectionSpec, VsphereError, connect, disconnect

    HAS_MIGLAB = True
    IMPORT_ERROR = None
except ImportError as exc:  # reported by require_miglab()
    HAS_MIGLAB = False
    IMPORT_ERROR = exc


def connection_argument_spec() -> dict:
    return {
        "hostname": {"type": "str", "fallback": (env_fallback, ["VMWARE_HOST"])},
        "username": {
            "type": "str",
            "aliases": ["admin", "user"],
            "fallback": (env_fallback, ["VMWARE_USER"]),
        },
        "password": {
            "type": "str",
            "aliases": ["pass", "pwd"],
            "no_log": True,
            "fallback": (env_fallback, ["VMWARE_PASSWORD"]),
        },
        "port": {"type": "int", "default": 443, "fallback": (env_fallback, ["VMWARE_PORT"])},
        "validate_certs": {
            "type": "bool",
            "default": True,
            "fallback": (env_fallback, ["VMWARE_VALIDATE_CERTS"]),
        },
        "ca_bundle": {"type": "path", "fallback": (env_fallback, ["VMWARE_CA_BUNDLE"])},
    }


def require_miglab(module) -> None:
    if not HAS_MIGLAB:
        module.fail_json(
            msg=missing_required_lib("miglab (with pyvmomi)"), exception=str(IMPORT_ERROR)
        )


def connection_spec(module):
    p = module.params
    return ConnectionSpec(
        p["hostname"],
        p["username"],
        p["password"],
        p["port"],
        p["validate_certs"],
        p.get("ca_bundle"),
    )


@contextlib.contextmanager
def rest_session(module):
    """Yield a logged-in vSphere Automation REST session (LifecycleApi); errors -> fail_json."""
    require_miglab(module)
    from miglab.adapters.vsphere.lifecycle import LifecycleApi

    api = LifecycleApi(connection_spec(module))
    try:
        api.login()
        yield api
    except VsphereError as exc:
        module.fail_json(msg=str(exc))
    finally:
        api.logout()


@contextlib.contextmanager
def vsphere_session(module):
    """Yield a logged-in ServiceInstance; any VsphereError becomes a clean fail_json."""
    require_miglab(module)
    spec = connection_spec(module)
    si = None
    try:
        si = connect(spec)
        yield si
    except VsphereError as exc:
        module.fail_json(msg=str(exc))
    finally:
        if si is not None:
            disconnect(si)
