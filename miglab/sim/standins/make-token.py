#!/usr/bin/env python3
"""Writes a STAND-IN NVIDIA License System client configuration token for the miglab tests.

    make-token.py SERVER OUT_FILE [SENTINEL]

The shape is that of a real client configuration token: a JWS (base64url header, payload,
signature joined by dots) whose payload carries "iss": "NLS Service Instance",
"aud": "NLS Licensed Client" and service_instance_configuration.node_url_list[0].url, as issued
by NVIDIA's DLS and reproduced by FastAPI-DLS (app/main.py, /-/client-token). The signature is
not a signature: it holds SENTINEL in clear, so tests can grep logs for a leaked token.
"""

import base64
import json
import sys


def b64(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def main() -> None:
    server, out = sys.argv[1], sys.argv[2]
    sentinel = sys.argv[3] if len(sys.argv) > 3 else "MIGLAB_TOKEN_SENTINEL_d41f8a"
    header = {"alg": "RS256", "typ": "JWT"}
    payload = {
        "iss": "NLS Service Instance",
        "aud": "NLS Licensed Client",
        "iat": 1767225600,
        "nbf": 1767225600,
        "exp": 1830297600,
        "update_mode": "ABSOLUTE",
        "scope_ref_list": ["00000000-0000-0000-0000-000000000001"],
        "fulfillment_class_ref_list": [],
        "service_instance_configuration": {
            "nls_service_instance_ref": "00000000-0000-0000-0000-000000000002",
            "svc_port_set_list": [
                {
                    "idx": 0,
                    "d_name": "DLS",
                    "svc_port_map": [
                        {"service": "auth", "port": 443},
                        {"service": "lease", "port": 443},
                    ],
                }
            ],
            "node_url_list": [{"idx": 0, "url": server, "url_qr": server, "svc_port_set_idx": 0}],
        },
        "miglab_standin": True,
    }
    signature = "STANDIN-" + sentinel + "-" + "A" * 64
    with open(out, "w", encoding="ascii") as fh:
        fh.write(f"{b64(header)}.{b64(payload)}.{signature}")


if __name__ == "__main__":
    main()
