"""Lab settings of the inventory beyond the hosts' hardware, checked before anything connects:
the vCenter connection (``miglab_vcenter``) and where the NVIDIA host driver bundle comes from
(core: no Ansible, no pyVmomi).

``miglab_vcenter`` holds community.vmware's connection options::

    miglab_vcenter:
      hostname: vcenter.lab.example          # a host name or IP address, not a URL
      username: administrator@vsphere.local
      password: "{{ vault_vcenter_password }}"
      port: 443
      validate_certs: true
      ca_bundle: /etc/ssl/certs/lab-ca.pem

Values Ansible fills in later are accepted as they are: templates (``{{ ... }}``) and
vault-encrypted values (``!vault``). A lab that declares a vCenter must name its host, user and
password, unless ``VMWARE_HOST``, ``VMWARE_USER`` / ``VMWARE_PASSWORD`` give them (as the
vSphere modules read them). Messages never show a password.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from miglab.core import schema
from miglab.errors import Problems
from miglab.formats.yamlio import Vaulted

VCENTER_VAR = "miglab_vcenter"
VCENTER_KEYS = ("hostname", "username", "password", "port", "validate_certs", "ca_bundle")
VCENTER_ENV = {"hostname": "VMWARE_HOST", "username": "VMWARE_USER", "password": "VMWARE_PASSWORD"}
BUNDLE_URL_VAR = "esxi_vgpu_driver_bundle_url"
BUNDLE_PATH_VAR = "esxi_vgpu_driver_bundle_path"
URL_SCHEMES = ("http", "https", "ftp", "file")  # what ansible.builtin.get_url fetches
LICENSE_MODE_VAR = "guest_vgpu_driver_license_mode"
# where the guest driver's version can be read: the version itself, or the installer's file name
GUEST_DRIVER_VARS = ("guest_vgpu_driver_version", "guest_vgpu_driver_url", "guest_vgpu_driver_src")
# From vGPU software 15.0 (driver branch R525) on, guests license only from NVIDIA License System:
# "All releases in this release family of NVIDIA vGPU software are incompatible with all
# releases of the NVIDIA vGPU software license server" (vGPU 15.x release notes; real-lab notes
# G3; docs/research/issue16-guest-facts.md).
LEGACY_LICENSING_ENDS_AT = 525  # the first branch without it
CHECKED_VARS = (VCENTER_VAR, BUNDLE_URL_VAR, BUNDLE_PATH_VAR, LICENSE_MODE_VAR)
# Ansible's boolean spellings (module options of type bool accept them).
_BOOL_WORDS = {"yes", "no", "true", "false", "on", "off", "y", "n", "t", "f", "1", "0"}
_LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = rf"{_LABEL}(\.{_LABEL})*\.?"


def connection_options(value) -> dict:
    """``miglab_vcenter`` -> the vCenter modules' connection options (action group
    ``miglab.lab.vmware``, set once per play with ``module_defaults``). Keys left out or null are
    dropped, so each module's own default or environment fallback (``VMWARE_HOST``, ...) applies."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{VCENTER_VAR} must be a mapping, not {type(value).__name__}")
    unknown = sorted(set(value) - set(VCENTER_KEYS))
    if unknown:
        raise ValueError(f"{VCENTER_VAR}: unknown keys {', '.join(map(str, unknown))}")
    return {k: value[k] for k in VCENTER_KEYS if value.get(k) is not None}


def deferred(value) -> bool:
    """A value Ansible resolves at run time (a template or a vault-encrypted secret)."""
    return isinstance(value, Vaulted) or (
        isinstance(value, str) and ("{{" in value or "{%" in value)
    )


def check(
    variables: Mapping, prefix: str, problems: Problems, env: Mapping, scopes: list | None = None
) -> None:
    """Check the lab settings among ``variables`` (one file's or one inventory group's), whose
    fields are named ``prefix`` + the variable's name. ``scopes``, when given, collects
    (variables, prefix, problems) for the checks across scopes (:func:`check_guest_licensing`)."""
    if scopes is not None:
        scopes.append((variables, prefix, problems))
    if VCENTER_VAR in variables:
        check_vcenter(variables[VCENTER_VAR], prefix + VCENTER_VAR, problems, env)
    if BUNDLE_URL_VAR in variables:
        check_bundle_url(variables[BUNDLE_URL_VAR], prefix + BUNDLE_URL_VAR, problems)
    if BUNDLE_PATH_VAR in variables:
        value = variables[BUNDLE_PATH_VAR]
        if isinstance(value, str) and "://" in value and not deferred(value):
            problems.add(
                prefix + BUNDLE_PATH_VAR,
                f"is a URL; a URL goes into {BUNDLE_URL_VAR}, this is a path on the host's "
                "datastore (/vmfs/volumes/...)",
            )
        elif value is not None and not isinstance(value, str):
            problems.add(
                prefix + BUNDLE_PATH_VAR,
                f"must be a path (a string), got {schema.type_name(value)}",
            )


def check_vcenter(value, field: str, problems: Problems, env: Mapping) -> None:
    if deferred(value):
        return
    if not isinstance(value, dict):
        problems.add(
            field,
            f"must be a mapping of {', '.join(VCENTER_KEYS)}, got {schema.type_name(value)}",
        )
        return
    for key in value:
        if not isinstance(key, str):
            problems.add(field, f"key {key!r} must be a string")
        elif key not in VCENTER_KEYS:
            hint = schema.close_matches(key, VCENTER_KEYS)
            extra = f"did you mean {hint[0]!r}?" if hint else f"known: {', '.join(VCENTER_KEYS)}"
            problems.add(f"{field}.{key}", f"unknown key; {extra}")
    for key, var in VCENTER_ENV.items():
        if key not in value:
            if not env.get(var):
                problems.add(
                    f"{field}.{key}",
                    f"is required: the lab declares a vCenter ({VCENTER_VAR}) without its "
                    f"{key}; give it{' (vault-encrypted)' if key == 'password' else ''} "
                    f"or set {var}",
                )
            elif key == "hostname":  # the modules take it from the environment: check it so
                _check_hostname(str(env[var]), f"{field}.{key}", problems, f" (from {var})")
            continue
        v = value[key]
        if deferred(v):
            continue
        if v is None or (isinstance(v, str) and not v.strip()):
            problems.add(
                f"{field}.{key}", f"is empty; give the {key} or leave the key out and set {var}"
            )
        elif not isinstance(v, str):
            shown = "" if key == "password" else f" {v!r}"
            problems.add(
                f"{field}.{key}",
                f"must be a string, got {schema.type_name(v)}{shown} (quote it)",
            )
        elif key == "hostname":
            _check_hostname(v, f"{field}.{key}", problems)
    if "port" in value and not deferred(value["port"]):
        _check_port(value["port"], f"{field}.port", problems)
    if "validate_certs" in value:
        v = value["validate_certs"]
        if (
            not deferred(v)
            and not isinstance(v, bool)
            and not (isinstance(v, str) and v.strip().lower() in _BOOL_WORDS)
        ):
            problems.add(
                f"{field}.validate_certs",
                f"must be true or false, got {schema.type_name(v)} {v!r}",
            )
    if "ca_bundle" in value:
        v = value["ca_bundle"]
        if v is not None and not deferred(v) and (not isinstance(v, str) or not v.strip()):
            problems.add(
                f"{field}.ca_bundle",
                f"must be the path of a PEM file, got {schema.type_name(v)} {v!r}",
            )
        elif isinstance(v, str) and "://" in v and not deferred(v):
            problems.add(f"{field}.ca_bundle", f"{v!r} is a URL; give the path of a PEM file")


def redact_url(text: str) -> str:
    """``text`` with the user and password of any URL in it (``scheme://user:pass@host``)
    replaced by ``***``: messages name the URL, never its credentials."""
    return _USERINFO.sub(r"\1***@", text)


_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s@]*@")
_ZONE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # an IPv6 zone: an interface name or number


def _check_hostname(v: str, field: str, problems: Problems, source: str = "") -> None:
    shown = repr(redact_url(v))
    host = v.strip(" ")
    if any(not c.isprintable() or c.isspace() for c in host):  # CR/LF would reach the HTTP headers
        problems.add(
            field,
            f"{shown} is not a valid host name or IP address{source}: it holds white space or "
            "control characters",
        )
        return
    if "://" in host:
        scheme = host.split("://", 1)[0]
        try:
            bare = urlsplit(host).hostname if scheme else None
        except ValueError:  # e.g. an unclosed [IPv6 address
            bare = None
        problems.add(
            field,
            f"{shown} is a URL ({scheme}://...){source}; give the host name only"
            + (f": {bare!r} (a port goes into port)" if bare else ""),
        )
        return
    if "/" in host or "\\" in host:
        problems.add(
            field,
            f"{shown} has a path{source}; give the host name only (the modules add /sdk "
            "themselves)",
        )
        return
    if "@" in host:
        problems.add(field, f"{shown} holds a user (user@host){source}; give the host name only")
        return
    if host.startswith("[") != host.endswith("]"):
        problems.add(
            field, f"{shown} is not a valid host name or IP address{source}: unbalanced [ ]"
        )
        return
    address, _, zone = host.strip("[]").partition("%")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        ip = None
    if ip is not None:
        if zone and (ip.version != 6 or not _ZONE.fullmatch(zone)):
            problems.add(field, f"{shown} has an invalid IPv6 zone{source}")
        return
    if ":" in host:
        problems.add(
            field, f"{shown} holds a port{source}; give the host name only and the port as port"
        )
        return
    labels = host.rstrip(".").split(".")
    if len(host) > 253 or not re.fullmatch(_HOSTNAME, host) or all(x.isdigit() for x in labels):
        problems.add(field, f"{shown} is not a valid host name or IP address{source}")


# An inventory's host or group name: Ansible looks host_vars/<name> and group_vars/<name> up as
# paths and the roles hand host names to commands, so letters, digits and . _ - : only, plus
# [a:b] ranges of the YAML inventory (esxi-[01:04].lab.example) and % of an IPv6 zone.
_INVENTORY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:%\[\]-]*")


def check_inventory_name(name, kind: str, field: str, problems: Problems) -> bool:
    """Whether ``name`` (of a host or a group) is safe to be a path and an argument."""
    text = str(name)
    if len(text) <= 253 and _INVENTORY_NAME.fullmatch(text) and ".." not in text:
        return True
    bad = sorted({c for c in text if not (c.isascii() and (c.isalnum() or c in "_.:%[]-"))})
    why = (
        f"holds {', '.join(repr(c) for c in bad[:5])}"
        if bad
        else "is longer than 253 characters"
        if len(text) > 253
        else "holds '..'"
        if ".." in text
        else "must start with a letter, a digit or _"
    )
    problems.add(
        field,
        f"{kind} name {why}: letters, digits and . _ - : only (Ansible reads "
        f"{kind}_vars/<name> as a path; commands get host names as arguments)",
    )
    return False


def _check_port(v, field: str, problems: Problems) -> None:
    if isinstance(v, str) and re.fullmatch(r"[0-9]{1,5}", v.strip()):  # ASCII digits only
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        problems.add(field, f"must be an integer (1-65535), got {schema.type_name(v)} {v!r}")
    elif not 1 <= v <= 65535:
        problems.add(field, f"{v} is not a TCP port (1-65535)")


def check_bundle_url(value, field: str, problems: Problems) -> None:
    if value is None or deferred(value) or value == "":
        return  # the role's default "" means: no URL (a datastore path instead)
    if not isinstance(value, str):
        problems.add(field, f"must be a URL (a string), got {schema.type_name(value)}")
        return
    url = value.strip()
    shown = repr(redact_url(value))
    if any(c.isspace() or not c.isprintable() for c in url):
        problems.add(field, f"{shown} is not a URL: it contains white space or control characters")
        return
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range or not a number
    except ValueError as exc:
        why = (
            "has a port out of range (1-65535)"
            if str(exc).startswith("Port out of range")
            else f"is not a valid URL: {redact_url(str(exc))}"
        )
        problems.add(field, f"{shown} {why}")
        return
    scheme = parts.scheme.lower()
    if scheme not in URL_SCHEMES:
        problems.add(
            field,
            (f"scheme {parts.scheme!r} is not supported" if scheme else f"{shown} has no scheme")
            + f"; the bundle URL must be {', '.join(s + '://' for s in URL_SCHEMES)}",
        )
        return
    if scheme == "file":
        if not parts.path or parts.path == "/":
            problems.add(field, f"{shown} names no file")
        return
    if not parts.hostname:
        problems.add(field, f"{shown} names no host")
    elif not parts.path or parts.path.endswith("/"):
        problems.add(field, f"{shown} names no file (the offline bundle .zip)")


_DRIVER_IN_VALUE = re.compile(r"(?<![\d.])(\d{3})\.\d{1,3}(?:\.\d{1,3})?(?![\d.])")


def driver_branch(value) -> int | None:
    """The driver branch (535) a guest driver variable names: a version (``535.216.01``) or an
    installer's path or URL (``.../NVIDIA-Linux-x86_64-535.216.01-grid.run``); None when it
    names none (or Ansible fills it in later)."""
    if not isinstance(value, str | int | float) or isinstance(value, bool) or deferred(value):
        return None
    text = str(value).rsplit("/", 1)[-1]
    m = _DRIVER_IN_VALUE.search(text)
    return int(m.group(1)) if m else None


def check_guest_licensing(scopes: list) -> None:
    """``guest_vgpu_driver_license_mode: legacy`` with a guest driver of branch R525 or later,
    anywhere in the inventory (the two are often set in different group files): one problem at
    the licence mode's field. Values Ansible fills in later are not judged."""
    branches = [
        (branch, prefix + var)
        for variables, prefix, _ in scopes
        for var in GUEST_DRIVER_VARS
        if var in variables
        for branch in [driver_branch(variables[var])]
        if branch is not None
    ]
    newer = [(b, field) for b, field in branches if b >= LEGACY_LICENSING_ENDS_AT]
    if not newer:
        return
    branch, where = max(newer)
    for variables, prefix, problems in scopes:
        mode = variables.get(LICENSE_MODE_VAR)
        if isinstance(mode, str) and mode.strip().lower() == "legacy":
            problems.add(
                prefix + LICENSE_MODE_VAR,
                f"legacy licensing does not work with the R{branch} guest driver ({where}): "
                "from vGPU software 15 (R525) on, guests are licensed only by NVIDIA License "
                "System; use nls with a client configuration token "
                "(guest_vgpu_driver_license_token or _token_src)",
            )
