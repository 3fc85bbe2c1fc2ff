"""Documentation fragment: community.vmware-compatible connection options."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  hostname:
    description:
      - vCenter (or ESXi) host name or IP address.
      - If not set, the environment variable E(VMWARE_HOST) is used.
    type: str
  username:
    description:
      - User name for vCenter.
      - If not set, the environment variable E(VMWARE_USER) is used.
    type: str
    aliases: [admin, user]
  password:
    description:
      - Password of O(username).
      - If not set, the environment variable E(VMWARE_PASSWORD) is used.
    type: str
    aliases: [pass, pwd]
  port:
    description:
      - vCenter HTTPS port.
      - If not set, the environment variable E(VMWARE_PORT) is used.
    type: int
    default: 443
  validate_certs:
    description:
      - Verify vCenter's TLS certificate. Only set to V(false) for a lab you trust.
      - If not set, the environment variable E(VMWARE_VALIDATE_CERTS) is used.
    type: bool
    default: true
  ca_bundle:
    description:
      - PEM file of the certificate authorities that signed vCenter's certificate, for
        O(validate_certs=true) with a private CA.
      - If not set, the environment variable E(VMWARE_CA_BUNDLE) is used.
    type: path
notes:
  - One session is opened per module call and reused for all its work.
  - Requires the C(miglab) Python package and C(pyvmomi) on the host the module runs on.
"""
