"""One vCenter/ESXi session per module call, with clear errors for the usual failures."""

from __future__ import annotations

import contextlib
import socket
import ssl
from dataclasses import dataclass


class VsphereError(RuntimeError):
    """A vSphere failure, phrased for the operator (no traceback needed)."""


@dataclass(frozen=True)
class ConnectionSpec:
    hostname: str
    username: str
    password: str
    port: int = 443
    validate_certs: bool = True
    ca_bundle: str | None = None

    def describe(self) -> str:
        return f"{self.username}@{self.hostname}:{self.port}"


def ssl_context(spec: ConnectionSpec) -> ssl.SSLContext:
    if not spec.validate_certs:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    ctx = (
        ssl.create_default_context(cafile=spec.ca_bundle)
        if spec.ca_bundle
        else ssl.create_default_context()
    )
    return ctx


def connect(spec: ConnectionSpec):
    """Log in and return the ServiceInstance; raise VsphereError with the reason otherwise."""
    from pyVim.connect import SmartConnect
    from pyVmomi import vim

    if not spec.hostname:
        raise VsphereError("hostname is required (or set VMWARE_HOST)")
    if not spec.username or spec.password is None:
        raise VsphereError(
            "username and password are required (or set VMWARE_USER and VMWARE_PASSWORD)"
        )
    try:
        return SmartConnect(
            host=spec.hostname,
            user=spec.username,
            pwd=spec.password,
            port=spec.port,
            sslContext=ssl_context(spec),
            disableSslCertValidation=not spec.validate_certs,
            connectionPoolTimeout=60,
        )
    except vim.fault.InvalidLogin:
        raise VsphereError(
            f"login failed for {spec.describe()}: wrong user name or password"
        ) from None
    except ssl.SSLCertVerificationError as exc:
        raise VsphereError(
            f"TLS certificate of {spec.hostname}:{spec.port} not trusted ({exc.verify_message}); "
            "give its CA with ca_bundle, or set validate_certs: false for a lab you trust"
        ) from None
    except ssl.SSLError as exc:
        raise VsphereError(f"TLS error talking to {spec.hostname}:{spec.port}: {exc}") from None
    except (ConnectionRefusedError, socket.gaierror, TimeoutError, OSError) as exc:
        raise VsphereError(
            f"cannot reach {spec.hostname}:{spec.port}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    except vim.fault.HostConnectFault as exc:  # how SmartConnect wraps a socket error
        raise VsphereError(
            f"cannot reach {spec.hostname}:{spec.port}: {getattr(exc, 'msg', None) or exc}"
        ) from None
    except vim.fault.VimFault as exc:
        raise VsphereError(
            f"vSphere refused the login for {spec.describe()}: {getattr(exc, 'msg', exc)}"
        ) from None


def disconnect(si) -> None:
    from pyVim.connect import Disconnect

    with contextlib.suppress(Exception):  # the session may already be gone
        Disconnect(si)
