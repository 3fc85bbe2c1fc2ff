"""Clock sync (issue 16): NTP packets and maths, chrony's tracking report, the judgement of a
scenario run's clocks, the ``clock`` object of ``miglab_run.json``, and the guest's measurement
against miglab's responder on this machine's loopback (no skew: a real clock skew is injected
in tests/integration/test_clock_skew.py).

Sources: RFC 5905 sections 6-8 and RFC 4330 sections 3-5 (packet layout, timestamps and their
eras, offset and delay); chrony's ``doc/chronyc.adoc`` and ``client.c`` for ``chronyc
tracking`` (tests/fixtures/chrony/README.md; docs/research/issue16-guest-facts.md "Clock sync").
No assertion depends on how fast this machine is: offsets are compared within the measured
uncertainty plus a margin.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from miglab.core.clock import (
    ClockReading,
    Exchange,
    best_exchange,
    check_clocks,
    relative_to_controller,
    to_controller_time,
)
from miglab.errors import ValidationError
from miglab.formats.chrony import ChronyError, parse_tracking, parse_tracking_csv
from miglab.formats.run_meta import read_run_meta
from miglab.formats.sntp import BadPacket, Packet, from_ntp, to_ntp
from miglab.mlperf.guest import clock as guest_clock
from testlib import FIXTURES, clock_responder

CHRONY = FIXTURES / "chrony"


# --- NTP timestamps and packets (RFC 5905, RFC 4330) ----------------------------------------------
def test_ntp_timestamps_of_both_eras():
    # 1970-01-01 is 2,208,988,800 s after NTP's 1900 epoch (0x83AA7E80)
    assert to_ntp(0.0) == 0x83AA7E80 << 32
    assert from_ntp(0x83AA7E80 << 32) == 0.0
    assert to_ntp(1.5) == ((0x83AA7E80 + 1) << 32) | (1 << 31)
    # RFC 4330 section 3: the seconds wrap on 2036-02-07 06:28:16 UTC (Unix 2085978496); a
    # timestamp whose top bit is clear is of era 1
    wrap = 2_085_978_496
    assert to_ntp(wrap + 0.25) == 1 << 30
    assert from_ntp(1 << 30) == wrap + 0.25
    assert from_ntp(to_ntp(wrap - 1.0)) == wrap - 1.0
    now = 1_796_400_000.123456
    assert abs(from_ntp(to_ntp(now)) - now) < 1e-6


def test_packet_layout():
    raw = Packet(mode=3, transmit=to_ntp(1.5)).encode()
    assert len(raw) == 48
    assert raw[0] == 0x23  # LI 0, VN 4, mode 3 (client)
    assert raw[40:48] == to_ntp(1.5).to_bytes(8, "big")  # the transmit timestamp comes last
    back = Packet.decode(raw + b"extension fields are not read")
    assert (back.leap, back.version, back.mode, back.transmit) == (0, 4, 3, to_ntp(1.5))
    reply = Packet(leap=3, mode=4, stratum=16, root_delay=0.5, ref_id=b"MGLB").encode()
    assert reply[0] == 0xE4  # LI 3, VN 4, mode 4 (server)
    assert Packet.decode(reply).root_delay == 0.5
    with pytest.raises(BadPacket, match="47 bytes, an NTP header is 48"):
        Packet.decode(raw[:47])
    kod = Packet.decode(Packet(mode=4, stratum=0, ref_id=b"RATE").encode())
    assert kod.kiss_code == "RATE"


def test_offset_and_delay_of_one_exchange():
    # the client's clock is 2 s behind the server's; 0.5 s each way; 0.1 s in the server
    e = Exchange(t1=100.0, t2=102.5, t3=102.6, t4=101.1)
    assert e.theta == pytest.approx(2.0)
    assert e.delay == pytest.approx(1.0)
    assert e.client_offset == pytest.approx(-2.0)  # miglab's sign: the client is behind
    assert e.uncertainty == pytest.approx(0.5)
    # an asymmetric path (0.1 s out, 0.9 s back) moves theta by at most delay / 2
    a = Exchange(t1=100.0, t2=102.1, t3=102.2, t4=101.2)
    assert abs(a.theta - 2.0) <= a.uncertainty
    assert best_exchange([e, a]) is e  # the smallest delay wins
    assert best_exchange([]) is None


# --- chrony ---------------------------------------------------------------------------------------
def test_chronyc_tracking_text_and_csv_agree():
    text = parse_tracking((CHRONY / "tracking.txt").read_text())
    csv = parse_tracking_csv((CHRONY / "tracking-c.csv").read_text())
    assert (text.ref_id, text.ref_name, text.stratum) == ("CB00710F", "ntp1.example.net", 3)
    assert csv.ref_name == "203.0.113.15"
    for t in (text, csv):
        assert t.system_time_s == 0.000006523  # "seconds slow": positive
        assert t.offset_s == -0.000006523  # the system clock is behind true time
        assert t.frequency_ppm == -3.225  # "ppm slow"
        assert t.root_delay_s == 0.013639022 and t.root_dispersion_s == 0.001100737
        # chronyc.adoc's bound less the offset itself
        assert t.uncertainty_s == pytest.approx(0.001100737 + 0.013639022 / 2)
        assert t.leap == "Normal" and t.unusable is None
    assert parse_tracking((CHRONY / "tracking-c.csv").read_text()) == csv
    fast = (CHRONY / "tracking.txt").read_text().replace("seconds slow", "seconds fast")
    assert parse_tracking(fast).offset_s == 0.000006523


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("CB00710F", "CB0071"), "Reference ID: not 8 hex digits"),
        (("0.000006523", "NaN"), "System time: not a finite number"),
        (("Normal", "Normalish"), "Leap status: not one of"),
        ((",3,", ",x,"), "Stratum: not a stratum"),
        ((",64.2,", ","), "13 comma-separated fields, the tracking report has 14"),
    ],
)
def test_chronyc_csv_that_does_not_read_names_the_field(edit, message):
    text = (CHRONY / "tracking-c.csv").read_text().replace(*edit)
    with pytest.raises(ChronyError, match=message):
        parse_tracking_csv(text)


def test_chrony_states_without_a_shared_reference():
    base = (CHRONY / "tracking-c.csv").read_text()
    local = parse_tracking_csv(base.replace("CB00710F,203.0.113.15", "7F7F0101,"))
    assert "local mode" in local.unusable
    unsynced = parse_tracking_csv(base.replace("Normal", "Not synchronised"))
    assert "not synchronised" in unsynced.unusable
    with pytest.raises(ChronyError, match="System time: not '... of NTP time'"):
        parse_tracking(
            (CHRONY / "tracking.txt").read_text().replace(" of NTP time", " of true time")
        )


def test_the_guest_reads_chronyc_c_tracking():
    class Done:
        returncode, stdout, stderr = 0, (CHRONY / "tracking-c.csv").read_text(), ""

    seen = []

    def run(argv, **kw):
        seen.append(argv)
        return Done()

    r = guest_clock.measure_chrony(run=run)
    assert seen == [["chronyc", "-c", "tracking"]]
    assert (r.method, r.offset_s, r.reference) == (
        "chrony",
        -0.000006523,
        "CB00710F (203.0.113.15)",
    )
    # the controller tracks the same source, 2 ms ahead of it: the guest is 2.0065 ms behind it
    ctrl = ClockReading("chrony", 0.002, 0.001, "CB00710F (203.0.113.15)", 1, "2026-01-01T00:00Z")
    rel = relative_to_controller(r, ctrl)
    assert rel.offset_s == pytest.approx(-0.002006523)
    assert rel.uncertainty_s == pytest.approx(r.uncertainty_s + 0.001)
    assert (rel.to_reference_s, rel.controller_to_reference_s) == (-0.000006523, 0.002)
    other = ClockReading("chrony", 0.0, 0.001, "C0000201 (192.0.2.1)", 1, "2026-01-01T00:00Z")
    assert "not comparable" in relative_to_controller(r, other).error


# --- the judgement --------------------------------------------------------------------------------
def reading(offset: float, uncertainty: float = 0.0002) -> ClockReading:
    return ClockReading("responder", offset, uncertainty, "10.88.0.1:12123", 8, "2026-01-01T00:00Z")


def test_clocks_within_the_bound_are_ok_and_beyond_it_flagged():
    ok = check_clocks({"vm1": reading(0.010), "vm2": reading(-0.020)})
    assert ok.state == "ok" and ok.spread_s == pytest.approx(0.030)
    bad = check_clocks({"vm1": reading(0.300), "vm2": reading(0.001), "vm3": reading(0.0)})
    assert bad.flagged and bad.spread_s == pytest.approx(0.300)
    assert bad.reasons == ("vm1 is 300.0 ms, vm3 0.0 ms off the controller's clock",)
    assert check_clocks({"vm1": reading(0.300), "vm2": reading(0.0)}, bound_s=0.5).state == "ok"
    vague = check_clocks({"vm1": reading(0.0, uncertainty=0.2), "vm2": reading(0.0)})
    assert vague.flagged and "known only to +-200.0 ms" in vague.reasons[0]


def test_a_vm_without_a_measurement_leaves_the_run_not_checked():
    c = check_clocks(
        {"vm1": reading(0.001), "vm2": None, "vm3": ClockReading.failed("responder", "no answer")}
    )
    assert c.state == "not checked" and c.offsets == {"vm1": 0.001}
    assert c.reasons == (
        "vm2: not measured (no clock in miglab_run.json)",
        "vm3: not measured (responder: no answer)",
    )


def test_a_window_in_guest_time_moves_into_the_controllers():
    t = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    w = (t, t + timedelta(seconds=10))
    # the guest is 300 ms ahead: its 12:00:00.000 is the controller's 11:59:59.700
    assert to_controller_time(w, 0.3) == (
        w[0] - timedelta(seconds=0.3),
        w[1] - timedelta(seconds=0.3),
    )
    assert to_controller_time(w, None) == w


# --- miglab_run.json's clock ----------------------------------------------------------------------
GOOD = {
    "method": "responder",
    "offset_s": 0.3,
    "uncertainty_s": 0.0002,
    "reference": "10.88.0.1:12123",
    "samples": 8,
    "measured_at": "2026-01-01T00:00:00+00:00",
}


def _meta(tmp_path, text: str):
    (tmp_path / "miglab_run.json").write_text(text)
    return read_run_meta(tmp_path)


def test_a_clock_object_is_read(tmp_path):
    assert _meta(tmp_path, json.dumps({"clock": GOOD})).clock == GOOD
    failed = {"method": "ntp", "error": "no answer", "measured_at": "2026-01-01T00:00:00Z"}
    assert _meta(tmp_path, json.dumps({"clock": failed})).clock == failed


@pytest.mark.parametrize(
    ("clock", "field", "reason"),
    [
        ({**GOOD, "offset_s": "0.3"}, "clock.offset_s", "must be a number of seconds, got str"),
        ({**GOOD, "offset_s": True}, "clock.offset_s", "must be a number of seconds, got bool"),
        ({**GOOD, "offset_s": 1e7}, "clock.offset_s", "must be a finite number of seconds"),
        ({**GOOD, "uncertainty_s": -1}, "clock.uncertainty_s", "must be 0 or more"),
        ({k: v for k, v in GOOD.items() if k != "uncertainty_s"}, "clock.uncertainty_s", "missing"),
        ({k: v for k, v in GOOD.items() if k != "method"}, "clock.method", "missing"),
        ({**GOOD, "method": "ptp"}, "clock.method", "must be one of responder, ntp, chrony"),
        ({**GOOD, "samples": 0}, "clock.samples", "must be an integer of 1 or more"),
        ({**GOOD, "reference": ""}, "clock.reference", "must be a non-empty string"),
        ({**GOOD, "measured_at": "2026-01-01T00:00:00"}, "clock.measured_at", "time zone"),
        ({**GOOD, "offset": 0.3}, "clock.offset", "unknown key"),
        ({**GOOD, "error": "x"}, "clock.offset_s", "must not be given with clock.error"),
        ({"method": "ntp", "error": ""}, "clock.error", "must be a non-empty string"),
        ("fast", "clock", "must be a dict, got str"),
    ],
)
def test_a_bad_clock_object_is_one_line_naming_its_field(tmp_path, clock, field, reason):
    with pytest.raises(ValidationError) as exc:
        _meta(tmp_path, json.dumps({"clock": clock}))
    lines = str(exc.value).splitlines()
    assert any(
        line.startswith(f"{tmp_path / 'miglab_run.json'}: {field}: ") and reason in line
        for line in lines
    ), lines


@pytest.mark.parametrize(
    ("literal", "reason"),
    [
        ("NaN", "NaN is not JSON"),
        ("-Infinity", "-Infinity is not JSON"),
        ("1e999", "1e999 is beyond a double"),
    ],
)
def test_a_number_json_has_not_is_named_by_its_field(tmp_path, literal, reason):
    text = json.dumps({"clock": GOOD}).replace('"offset_s": 0.3', f'"offset_s": {literal}')
    with pytest.raises(ValidationError) as exc:
        _meta(tmp_path, text)
    assert str(exc.value).startswith(f"{tmp_path / 'miglab_run.json'}: clock.offset_s: {reason}")


# --- the guest's side ---------------------------------------------------------------------------
def test_where_the_guest_finds_the_controller():
    assert guest_clock.ssh_client_address({"SSH_CONNECTION": "192.0.2.10 51000 192.0.2.20 22"}) == (
        "192.0.2.10"
    )
    # sshd -i on a pipe (the simulated lab's ProxyCommand) knows no peer
    assert guest_clock.ssh_client_address({"SSH_CONNECTION": "UNKNOWN 65535 UNKNOWN 65535"}) is None
    # /proc/net/route of a podman guest (10.88.0.0/16, gateway 10.88.0.1: the host)
    table = (
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t0100580A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "eth0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    )
    assert guest_clock.default_gateway(table) == "10.88.0.1"
    assert guest_clock.default_gateway(table.splitlines()[0]) is None
    assert guest_clock.split_server("ntp.example.org", 123) == ("ntp.example.org", 123)
    assert guest_clock.split_server("192.0.2.1:12123", 123) == ("192.0.2.1", 12123)
    assert guest_clock.split_server("[2001:db8::1]:1123", 123) == ("2001:db8::1", 1123)
    with pytest.raises(ValueError, match="not HOST"):
        guest_clock.split_server("host:port", 123)
    assert guest_clock.local_address_toward("127.0.0.1") == "127.0.0.1"
    assert guest_clock.local_address_toward("miglab-vm1") == ""  # a name: the guest decides


def test_the_responder_answers_only_client_requests():
    req = Packet(mode=3, transmit=to_ntp(1000.0)).encode()
    reply = Packet.decode(guest_clock.answer(req, received=2000.0))
    assert (reply.mode, reply.leap, reply.stratum, reply.ref_id) == (4, 3, 16, b"MGLB")
    assert reply.origin == to_ntp(1000.0) and from_ntp(reply.receive) == pytest.approx(2000.0)
    assert len(guest_clock.answer(req, 2000.0)) <= len(req)  # no amplification
    assert guest_clock.answer(Packet(mode=4).encode(), 0.0) is None
    assert guest_clock.answer(b"\x23" * 20, 0.0) is None


@pytest.fixture
def responder():
    with clock_responder() as port:
        yield port


def test_measuring_against_the_responder_on_the_same_clock(responder):
    r = guest_clock.measure("responder", "127.0.0.1", responder, samples=4, timeout=10)
    assert r.error is None and r.samples == 4
    assert (r.method, r.reference) == ("responder", f"127.0.0.1:{responder}")
    # one machine, one clock: zero, within the measured uncertainty (and a margin)
    assert abs(r.offset_s) <= r.uncertainty_s + 0.01
    # an NTP client would refuse miglab's responder: it says it is not synchronised
    n = guest_clock.measure("ntp", "127.0.0.1", responder, samples=1, timeout=30)
    assert "not synchronised" in n.error


def test_no_answer_is_a_reading_that_says_so(responder):
    quiet = guest_clock.bind("127.0.0.1", 0)  # bound, never answers
    try:
        port = quiet.getsockname()[1]
        r = guest_clock.measure("responder", "127.0.0.1", port, samples=2, timeout=0.3)
    finally:
        quiet.close()
    assert r.offset_s is None
    assert r.error.startswith(f"no answer from 127.0.0.1:{port} within 0.3 s")
    assert guest_clock.measure("ntp", None).error == "no NTP server given"


def test_a_run_records_its_clock_or_why_not(responder):
    from miglab.mlperf.guest.run import build_parser, measure_clock

    base = ["--sut", "onnxruntime", "--benchmark", "resnet50", "--out", "x"]
    parse = build_parser().parse_args
    assert measure_clock(parse(base)) is None  # --clock off by default: nothing recorded
    c = measure_clock(
        parse([*base, "--clock", "responder", "--clock-server", f"127.0.0.1:{responder}"])
    )
    assert c["method"] == "responder" and abs(c["offset_s"]) <= c["uncertainty_s"] + 0.01
    # ntp and chrony give an offset to the controller only with its own measurement
    c = measure_clock(parse([*base, "--clock", "chrony"]))
    assert c["error"] == "no --clock-controller: the controller's own measurement is needed"
    with pytest.raises(SystemExit):  # a bad --clock-controller is refused with the options
        parse([*base, "--clock", "ntp", "--clock-controller", '{"method": "ntp"}'])
