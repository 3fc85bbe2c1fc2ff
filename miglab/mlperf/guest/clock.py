"""``python -m miglab.mlperf.guest.clock``: this machine's clock against the controller's.

    python -m miglab.mlperf.guest.clock measure --method responder [--server HOST] [--port N]
    python -m miglab.mlperf.guest.clock measure --method ntp --server HOST[:PORT]
    python -m miglab.mlperf.guest.clock measure --method chrony
        [--samples N] [--timeout S] [--controller JSON]
    python -m miglab.mlperf.guest.clock serve [--bind ADDR] [--port N] [--daemon --pid-file F]
        [--idle-exit S]
    python -m miglab.mlperf.guest.clock stop --pid-file F

``measure`` prints one JSON line, a ``clock`` object of ``miglab_run.json``
(:class:`miglab.core.clock.ClockReading`): ``method``, ``offset_s`` (this clock minus the
controller's -- or, for ntp and chrony without ``--controller``, minus the reference's),
``uncertainty_s``, ``reference``, ``samples``, ``measured_at``; or ``method`` and ``error``
(exit 1). Methods:

- ``responder``: SNTP queries (RFC 4330) to miglab's responder on the controller (``serve``):
  the offset to the controller directly, the uncertainty half the shortest round trip. Without
  ``--server`` the controller is the address this machine's SSH connection comes from
  (``SSH_CONNECTION``), else its default IPv4 gateway (in the simulated lab the podman bridge,
  which is the controller).
- ``ntp``: SNTP queries to an NTP server; with ``--controller`` (the controller's own
  ``measure`` of the same server) the difference of the two offsets.
- ``chrony``: ``chronyc -c tracking``; with ``--controller`` likewise (the same source, else an
  error).

``serve`` answers SNTP client requests (48 bytes or more, mode 3) with this machine's clock:
mode 4, leap indicator 3 and stratum 16 (not synchronised -- no NTP client should set its clock
from it) and the reference ID ``MGLB``, which the ``responder`` method requires. A reply is no
larger than its request. ``--daemon`` goes to the background once the socket is bound (it prints
``{"pid", "bind", "port"}``, or an ``error:`` line and exits 1) and ``stop`` ends it; it also ends
after ``--idle-exit`` seconds without a request. Responders of one machine share their port
(SO_REUSEPORT): they all answer with the same clock.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from miglab.core.clock import METHODS, ClockReading, Exchange, best_exchange, relative_to_controller
from miglab.errors import EXIT_FAIL, EXIT_INVALID, EXIT_OK, ValidationError
from miglab.formats.chrony import ChronyError, parse_tracking_csv
from miglab.formats.run_meta import check_clock
from miglab.formats.sntp import (
    LEAP_UNSYNCHRONIZED,
    MODE_CLIENT,
    MODE_SERVER,
    BadPacket,
    Packet,
    from_ntp,
    to_ntp,
)

RESPONDER_REF_ID = b"MGLB"
RESPONDER_PORT = 12123  # unprivileged: the controller needs no root to answer
NTP_PORT = 123
NTP_GAP_S = 0.5
DEFAULT_SAMPLES = 8
DEFAULT_TIMEOUT_S = 2.0
CHRONYC = ("chronyc", "-c", "tracking")


__all__ = [
    "ClockReading",
    "add_measure_options",
    "answer",
    "bind",
    "controller_reading",
    "local_address_toward",
    "measure",
    "serve",
]


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


# --- where the controller is ------------------------------------------------------------------
def ssh_client_address(environ=None) -> str | None:
    """The address this machine's SSH connection comes from (``SSH_CONNECTION``, else
    ``SSH_CLIENT``), when it is an IP address (``sshd -i`` on a pipe says ``UNKNOWN``)."""
    env = os.environ if environ is None else environ
    for var in ("SSH_CONNECTION", "SSH_CLIENT"):
        words = env.get(var, "").split()
        if words:
            try:
                return str(ipaddress.ip_address(words[0]))
            except ValueError:
                continue
    return None


def default_gateway(route_table: str | None = None) -> str | None:
    """The default IPv4 gateway from ``/proc/net/route`` (its hex fields are little-endian)."""
    if route_table is None:
        try:
            route_table = Path("/proc/net/route").read_text()
        except OSError:
            return None
    for line in route_table.splitlines()[1:]:
        f = line.split()
        if len(f) >= 4 and f[1] == "00000000" and int(f[3], 16) & 0x2:  # RTF_GATEWAY
            try:
                return str(ipaddress.IPv4Address(int(f[2], 16).to_bytes(4, "little")))
            except ValueError:
                continue
    return None


def controller_address() -> tuple[str | None, str]:
    """(address, how it was found) of the controller, for ``--server`` left out."""
    ssh = ssh_client_address()
    if ssh:
        return ssh, "the SSH client's address"
    gw = default_gateway()
    if gw:
        return gw, "the default gateway"
    return None, "no SSH_CONNECTION and no default gateway"


def local_address_toward(host: str) -> str:
    """The controller's own address on the route to ``host`` (an IP address), as ``host`` sees
    it when no NAT is between; "" when ``host`` is not an IP address or has no route. No packet
    is sent (a UDP socket's connect only picks the route)."""
    try:
        ip = ipaddress.ip_address(str(host).strip("[]"))
    except ValueError:
        return ""
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((str(ip), 9))
            return s.getsockname()[0]
    except OSError:
        return ""


# --- SNTP client ------------------------------------------------------------------------------
def split_server(server: str, default_port: int) -> tuple[str, int]:
    """``HOST``, ``HOST:PORT``, ``[V6]:PORT`` or a bare IPv6 address -> (host, port)."""
    text = server.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or str(default_port)
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, str(default_port)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not HOST[:PORT]: {server[:80]!r}")
    return host, int(port)


def query(
    host: str,
    port: int,
    samples: int = DEFAULT_SAMPLES,
    timeout: float = DEFAULT_TIMEOUT_S,
    responder: bool = False,
    gap: float = 0.0,
) -> tuple[list[Exchange], list[str]]:
    """Up to ``samples`` SNTP exchanges with ``host:port`` within ``timeout`` seconds in all, at
    most twice as many requests; (the good exchanges, why the others were not). ``responder``:
    the reply must be miglab's (reference ID MGLB); otherwise a server's reply must be
    synchronised (RFC 4330 section 5: leap indicator not 3, stratum 1-15; stratum 0 is a
    kiss-o'-death)."""
    good: list[Exchange] = []
    bad: list[str] = []
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    family, _, _, _, address = infos[0]
    deadline = time.monotonic() + timeout
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        for _ in range(2 * samples):
            left = deadline - time.monotonic()
            if left <= 0 or len(good) >= samples:
                break
            t1 = time.time()
            sent = to_ntp(t1)
            try:
                sock.send(Packet(mode=MODE_CLIENT, transmit=sent).encode())
            except OSError as exc:  # the last request's ICMP port unreachable, reported now
                bad.append(f"{exc.strerror or exc}")
                time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
                continue
            while True:  # skip stray replies (an earlier request's, answered late)
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                try:
                    data = sock.recv(512)
                except TimeoutError:
                    break
                except OSError as exc:  # e.g. ICMP port unreachable: nobody listens
                    bad.append(f"{exc.strerror or exc}")
                    time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
                    break
                t4 = time.time()
                why = _reply_problem(data, sent, responder)
                if why == "stray":
                    continue
                if why:
                    bad.append(why)
                else:
                    reply = Packet.decode(data)
                    good.append(Exchange(t1, from_ntp(reply.receive), from_ntp(reply.transmit), t4))
                break
            if gap and len(good) < samples:
                time.sleep(min(gap, max(0.0, deadline - time.monotonic())))
    return good, bad


def _reply_problem(data: bytes, sent: int, responder: bool) -> str | None:
    try:
        reply = Packet.decode(data)
    except BadPacket as exc:
        return f"not an NTP reply: {exc}"
    if reply.origin != sent:
        return "stray"
    if reply.mode != MODE_SERVER:
        return f"reply of mode {reply.mode}, not 4 (server)"
    if reply.transmit == 0 or reply.receive == 0:
        return "reply without receive or transmit timestamp"
    if responder:
        if reply.ref_id != RESPONDER_REF_ID:
            return "not miglab's responder (reference ID is not MGLB)"
        return None
    if reply.kiss_code is not None:
        return f"kiss-o'-death {reply.kiss_code}"
    if reply.leap == LEAP_UNSYNCHRONIZED or not 1 <= reply.stratum <= 15:
        return f"the server is not synchronised (leap {reply.leap}, stratum {reply.stratum})"
    return None


def measure_sntp(
    method: str,
    host: str,
    port: int,
    samples: int = DEFAULT_SAMPLES,
    timeout: float = DEFAULT_TIMEOUT_S,
    gap: float = 0.0,
) -> ClockReading:
    """This clock minus ``host:port``'s, from the exchange of smallest delay."""
    at = now_iso()
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        good, bad = query(host, port, samples, timeout, responder=method == "responder", gap=gap)
    except OSError as exc:  # a name that does not resolve, no route
        return ClockReading.failed(method, f"{where}: {exc.strerror or exc}", at)
    best = best_exchange(good)
    if best is None:
        why = f"; {bad[-1]}" if bad else ""
        return ClockReading.failed(method, f"no answer from {where} within {timeout:g} s{why}", at)
    return ClockReading(
        method=method,
        offset_s=round(best.client_offset, 9),
        uncertainty_s=round(best.uncertainty, 9),
        reference=where,
        samples=len(good),
        measured_at=at,
    )


def measure_chrony(run=subprocess.run) -> ClockReading:
    """This clock minus chrony's reference's, from ``chronyc -c tracking``."""
    at = now_iso()
    try:
        res = run(list(CHRONYC), capture_output=True, text=True, timeout=10, check=False)
    except FileNotFoundError:
        return ClockReading.failed("chrony", "chronyc is not installed", at)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ClockReading.failed("chrony", f"{' '.join(CHRONYC)}: {exc}", at)
    if res.returncode != 0:
        why = (res.stderr or res.stdout or "").strip().splitlines()[-1:] or ["no output"]
        return ClockReading.failed(
            "chrony", f"{' '.join(CHRONYC)} exited {res.returncode}: {why[0][:200]}", at
        )
    try:
        t = parse_tracking_csv(res.stdout)
    except ChronyError as exc:
        return ClockReading.failed("chrony", f"{' '.join(CHRONYC)}: {exc}", at)
    if t.unusable:
        return ClockReading.failed("chrony", t.unusable, at)
    return ClockReading(
        method="chrony",
        offset_s=t.offset_s,
        uncertainty_s=round(t.uncertainty_s, 9),
        reference=t.reference,
        samples=1,
        measured_at=at,
    )


def measure(
    method: str,
    server: str | None = None,
    port: int | None = None,
    samples: int = DEFAULT_SAMPLES,
    timeout: float = DEFAULT_TIMEOUT_S,
    controller: ClockReading | None = None,
) -> ClockReading:
    """One reading by ``method`` (see the module's docstring); never raises for the network or
    a missing tool: the reading says what went wrong."""
    if method == "responder":
        host, how = (server, "given") if server else controller_address()
        if not host:
            return ClockReading.failed(method, f"no controller address: {how}", now_iso())
        try:
            host, p = split_server(host, port or RESPONDER_PORT)
        except ValueError as exc:
            return ClockReading.failed(method, str(exc), now_iso())
        reading = measure_sntp(method, host, p, samples, timeout)
        if reading.error and how != "given":
            reading = ClockReading.failed(
                method, f"{reading.error} (the controller taken as {how})", reading.measured_at
            )
        return reading
    if method == "ntp":
        if not server:
            return ClockReading.failed(method, "no NTP server given", now_iso())
        try:
            host, p = split_server(server, port or NTP_PORT)
        except ValueError as exc:
            return ClockReading.failed(method, str(exc), now_iso())
        # queries NTP_GAP_S apart, on top of the timeout: a server may rate-limit a burst (a
        # kiss-o'-death RATE)
        budget = timeout + NTP_GAP_S * (samples - 1)
        reading = measure_sntp(method, host, p, samples, budget, gap=NTP_GAP_S)
    elif method == "chrony":
        reading = measure_chrony()
    else:
        return ClockReading.failed("responder", f"unknown method {method!r}", now_iso())
    return reading if controller is None else relative_to_controller(reading, controller)


def controller_reading(text: str) -> ClockReading:
    """``--controller``'s JSON (the controller's own ``measure`` output, its last line);
    argparse's type: ArgumentTypeError naming the field that is wrong."""
    lines = str(text).strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        raise argparse.ArgumentTypeError("not JSON") from None
    try:
        check_clock(data, "controller")
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(str(exc.problems[0])) from None
    return ClockReading.from_json(data)


# --- responder --------------------------------------------------------------------------------
def answer(request: bytes, received: float) -> bytes | None:
    """The reply to one datagram, or None when it is not an SNTP client request."""
    try:
        req = Packet.decode(request)
    except BadPacket:
        return None
    if req.mode != MODE_CLIENT or not 1 <= req.version <= 4:
        return None
    reply = Packet(
        leap=LEAP_UNSYNCHRONIZED,
        version=req.version,
        mode=MODE_SERVER,
        stratum=16,
        poll=req.poll,
        precision=-20,  # about a microsecond: time.time()'s resolution
        ref_id=RESPONDER_REF_ID,
        reference=to_ntp(received),
        origin=req.transmit,
        receive=to_ntp(received),
        transmit=to_ntp(time.time()),
    )
    return reply.encode()


def bind(address: str = "0.0.0.0", port: int = RESPONDER_PORT) -> socket.socket:
    """The responder's UDP socket. SO_REUSEPORT: responders of one machine (two labs' benchmark
    phases at once) share the port; whichever gets a request answers it with the same clock."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve(sock: socket.socket, idle_exit: float | None = None, stop=None) -> int:
    """Answer requests on ``sock`` until ``stop()`` says so or ``idle_exit`` seconds pass
    without one; the number answered."""
    answered = 0
    last = time.monotonic()
    while stop is None or not stop():
        wait = 0.5 if idle_exit is None else min(0.5, max(0.0, last + idle_exit - time.monotonic()))
        if idle_exit is not None and wait <= 0:
            break
        sock.settimeout(wait)
        try:
            data, peer = sock.recvfrom(512)
        except TimeoutError:
            continue
        except OSError:
            continue
        received = time.time()
        reply = answer(data, received)
        if reply is not None:
            try:
                sock.sendto(reply, peer)
                answered += 1
            except OSError:
                pass
            last = time.monotonic()
    return answered


def _is_responder(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"miglab.mlperf.guest.clock" in cmdline and b"serve" in cmdline


def _daemon(sock: socket.socket, pid_file: Path | None, idle_exit: float | None) -> int | None:
    """Fork the bound responder into the background; in the caller its pid, in it None."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first:
        os.close(write_end)
        os.waitpid(first, 0)
        with os.fdopen(read_end) as r:
            text = r.read().strip()
        sock.close()
        return int(text) if text.isdigit() else -1
    os.close(read_end)
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    if pid_file is not None:
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(f"{os.getpid()}\n")
    os.write(write_end, f"{os.getpid()}\n".encode())
    os.close(write_end)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        serve(sock, idle_exit, stop=lambda: bool(stopping))
    finally:
        if pid_file is not None:
            try:
                if pid_file.read_text().strip() == str(os.getpid()):
                    pid_file.unlink()
            except OSError:
                pass
    return None


def _pid_in(pid_file: Path) -> int | None:
    try:
        text = pid_file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def cmd_serve(a: argparse.Namespace) -> int:
    pid_file = Path(a.pid_file) if a.pid_file else None
    if a.daemon and pid_file is None:
        print("error: --daemon needs --pid-file", file=sys.stderr)
        return EXIT_INVALID
    if pid_file is not None:
        old = _pid_in(pid_file)
        if old is not None and _is_responder(old):
            print(json.dumps({"pid": old, "bind": a.bind, "port": a.port, "running": True}))
            return EXIT_OK
    try:
        sock = bind(a.bind, a.port)
    except OSError as exc:
        why = exc.strerror or exc
        print(f"error: cannot listen on {a.bind} UDP {a.port}: {why}", file=sys.stderr)
        return EXIT_FAIL
    port = sock.getsockname()[1]
    if a.daemon:
        pid = _daemon(sock, pid_file, a.idle_exit)
        if pid is None:  # the responder itself
            os._exit(0)
        if pid < 0:
            print("error: the responder did not start", file=sys.stderr)
            return EXIT_FAIL
        print(json.dumps({"pid": pid, "bind": a.bind, "port": port}))
        return EXIT_OK
    print(json.dumps({"pid": os.getpid(), "bind": a.bind, "port": port}), flush=True)
    try:
        serve(sock, a.idle_exit)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return EXIT_OK


def cmd_stop(a: argparse.Namespace) -> int:
    pid_file = Path(a.pid_file)
    pid = _pid_in(pid_file)
    if pid is None or not _is_responder(pid):
        print(json.dumps({"stopped": None}))
        pid_file.unlink(missing_ok=True)
        return EXIT_OK
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while _is_responder(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid_file.unlink(missing_ok=True)
    print(json.dumps({"stopped": pid}))
    return EXIT_OK


def cmd_measure(a: argparse.Namespace) -> int:
    reading = measure(a.method, a.server, a.port, a.samples, a.timeout, a.controller)
    print(json.dumps(reading.as_json()))
    if reading.error:
        print(f"clock not measured: {reading.error}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


def _positive_int(text: str) -> int:
    v = int(text)
    if not 1 <= v <= 64:
        raise argparse.ArgumentTypeError("must be from 1 to 64")
    return v


def _seconds(text: str) -> float:
    v = float(text)
    if not 0 < v <= 3600:
        raise argparse.ArgumentTypeError("must be above 0 and at most 3600 seconds")
    return v


def add_measure_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """``measure``'s options; ``prefix`` (``clock-``) for ``miglab.mlperf.run``'s copies."""
    p.add_argument(
        f"--{prefix}server",
        help="responder: the controller's address (default: the SSH client's, else the default "
        "gateway); ntp: the NTP server, HOST[:PORT]",
    )
    p.add_argument(
        f"--{prefix}port",
        type=int,
        help=f"UDP port (responder {RESPONDER_PORT}, ntp {NTP_PORT})",
    )
    p.add_argument(
        f"--{prefix}samples",
        type=_positive_int,
        default=DEFAULT_SAMPLES,
        help=f"queries; the one of shortest round trip is kept (default {DEFAULT_SAMPLES})",
    )
    p.add_argument(
        f"--{prefix}timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds for all queries (default {DEFAULT_TIMEOUT_S:g})",
    )
    p.add_argument(
        f"--{prefix}controller",
        metavar="JSON",
        type=controller_reading,
        help="ntp, chrony: the controller's own measurement of the same reference (its "
        "`measure` output): the result is then the offset to the controller",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m miglab.mlperf.guest.clock",
        description="Measure this clock against the controller's; or answer such measurements.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="this clock's offset (one JSON line)")
    m.add_argument("--method", choices=METHODS, default="responder")
    add_measure_options(m)
    s = sub.add_parser("serve", help="answer SNTP requests with this machine's clock")
    s.add_argument("--bind", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    s.add_argument("--port", type=int, default=RESPONDER_PORT, help=f"default {RESPONDER_PORT}")
    s.add_argument("--daemon", action="store_true", help="go to the background once listening")
    s.add_argument("--pid-file", help="the responder's pid (needed with --daemon)")
    s.add_argument(
        "--idle-exit",
        type=float,
        help="end after this many seconds without a request (default: never)",
    )
    t = sub.add_parser("stop", help="end the responder of --pid-file")
    t.add_argument("--pid-file", required=True)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return {"measure": cmd_measure, "serve": cmd_serve, "stop": cmd_stop}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
