"""ESXi host services through vCenter (HostServiceSystem) and the host's lockdown mode.

ESXi's SSH service (TSM-SSH) with its default policy ("off": start and stop manually) stops at
every boot, so after a reboot Ansible cannot reach the host until something starts it again;
vCenter can (real-lab notes V6: ESXi service policy docs; F. Denneman, "Installing the NVAIE vGPU
driver", 2023). Lockdown mode keeps root out of SSH even then.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from miglab.adapters.vsphere.connection import VsphereError
from miglab.adapters.vsphere.tasks import fault_text

STATES = ("started", "stopped", "restarted", "unchanged")
POLICIES = ("on", "off", "automatic")


@dataclass
class ServiceResult:
    service: str
    running: bool
    policy: str
    lockdown_mode: str
    changed: bool
    actions: list[str]

    def as_dict(self) -> dict:
        return asdict(self)


def lockdown_mode(host) -> str:
    """The host's lockdown mode as vCenter reports it (vSphere 6.0+: config.lockdownMode);
    ``lockdownDisabled`` when vCenter does not say (older or disconnected hosts)."""
    config = getattr(host, "config", None)
    return str(getattr(config, "lockdownMode", None) or "lockdownDisabled")


def ensure_service(
    host, key: str = "TSM-SSH", state: str = "started", policy: str | None = None, check=False
) -> ServiceResult:
    """Bring one host service to ``state`` (and ``policy``, when given); check mode changes
    nothing and says what it would do."""
    if state not in STATES:
        raise VsphereError(f"service state {state!r} is not one of {', '.join(STATES)}")
    if policy is not None and policy not in POLICIES:
        raise VsphereError(f"service policy {policy!r} is not one of {', '.join(POLICIES)}")
    system = host.configManager.serviceSystem
    if system is None:
        raise VsphereError(f"{host.name}: vCenter offers no service system for this host")
    services = {s.key: s for s in (system.serviceInfo.service or [])}
    svc = services.get(key)
    if svc is None:
        raise VsphereError(
            f"{host.name}: no service {key} (the host has {', '.join(sorted(services)) or 'none'})"
        )
    running, current_policy = bool(svc.running), str(svc.policy)
    actions = []
    if policy is not None and policy != current_policy:
        actions.append(f"policy {current_policy} -> {policy}")
    if state == "started" and not running:
        actions.append("start")
    elif state == "stopped" and running:
        actions.append("stop")
    elif state == "restarted":
        actions.append("restart" if running else "start")
    if not check:
        from pyVmomi import vmodl

        for action in actions:
            try:
                if action.startswith("policy"):
                    system.UpdateServicePolicy(id=key, policy=policy)
                elif action == "start":
                    system.StartService(id=key)
                elif action == "stop":
                    system.StopService(id=key)
                else:
                    system.RestartService(id=key)
            except vmodl.MethodFault as exc:
                raise VsphereError(f"{host.name}: {action} {key}: {fault_text(exc)}") from None
    if actions:
        running = state in ("started", "restarted") or (state == "unchanged" and running)
        current_policy = policy or current_policy
    return ServiceResult(key, running, current_policy, lockdown_mode(host), bool(actions), actions)
