"""NTP/SNTP packets: the 48-byte header of RFC 5905 section 7.3 (NTPv4) and RFC 4330 section 4
(SNTPv4), and NTP's 64-bit timestamps.

The header, in network byte order::

    LI (2 bits) | VN (3 bits) | Mode (3 bits), Stratum (8), Poll (8, signed log2 s),
    Precision (8, signed log2 s), Root Delay (32, NTP short format 16.16 s),
    Root Dispersion (32, 16.16 s), Reference ID (4 bytes),
    Reference, Origin, Receive and Transmit Timestamps (64 bits each: seconds since
    1900-01-01 00:00 UTC in 32 bits, fraction in 32 bits)

Mode 3 is a client request, mode 4 a server's reply (RFC 5905 figure 10); LI 3 says the
server's clock is not synchronised; a reply of stratum 0 is a "kiss-o'-death" whose reference ID
is an ASCII code such as ``RATE`` (RFC 5905 section 7.4). Extension fields and a MAC may follow
the header; they are not read.

Timestamps are era-relative (RFC 5905 section 6): the 32-bit seconds wrap on 2036-02-07. A
timestamp is read with RFC 4330 section 3's rule: most significant bit set, era 0 (1968-2036,
counted from 1900); clear, era 1 (2036-2104, counted from 2036-02-07 06:28:16 UTC).

Only the standard library is used.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = [
    "LEAP_UNSYNCHRONIZED",
    "MODE_CLIENT",
    "MODE_SERVER",
    "NTP_PACKET_LEN",
    "BadPacket",
    "Packet",
    "from_ntp",
    "to_ntp",
]

NTP_PACKET_LEN = 48
NTP_UNIX_DELTA = 2_208_988_800  # seconds from 1900-01-01 (NTP era 0) to 1970-01-01 (Unix)
ERA = 1 << 32  # seconds in one NTP era
MODE_CLIENT, MODE_SERVER = 3, 4
LEAP_UNSYNCHRONIZED = 3
VERSION = 4
_HEADER = struct.Struct("!BBbbII4sQQQQ")
assert _HEADER.size == NTP_PACKET_LEN


class BadPacket(ValueError):
    """Bytes that are not an NTP header (too short, a field out of range)."""


def to_ntp(unix_seconds: float) -> int:
    """Unix time (seconds since 1970, a float) -> a 64-bit NTP timestamp of its era."""
    seconds = unix_seconds + NTP_UNIX_DELTA
    whole = int(seconds // 1)
    fraction = int((seconds - whole) * ERA)
    if fraction >= ERA:  # rounding of a float just below the next second
        whole, fraction = whole + 1, 0
    return ((whole % ERA) << 32) | fraction


def from_ntp(timestamp: int) -> float:
    """A 64-bit NTP timestamp -> Unix time, by RFC 4330 section 3's era rule."""
    seconds, fraction = timestamp >> 32, timestamp & (ERA - 1)
    if not seconds & 0x8000_0000:  # era 1: after 2036-02-07 06:28:16 UTC
        seconds += ERA
    return seconds - NTP_UNIX_DELTA + fraction / ERA


def _short(seconds: float) -> int:
    """Seconds -> NTP short format (unsigned 16.16), clamped to its range."""
    return max(0, min(0xFFFF_FFFF, round(seconds * 65536)))


@dataclass(frozen=True)
class Packet:
    """One NTP header; timestamps are the raw 64-bit values (0: not set)."""

    leap: int = 0
    version: int = VERSION
    mode: int = MODE_CLIENT
    stratum: int = 0
    poll: int = 0
    precision: int = 0
    root_delay: float = 0.0  # seconds
    root_dispersion: float = 0.0  # seconds
    ref_id: bytes = b"\0\0\0\0"
    reference: int = 0
    origin: int = 0
    receive: int = 0
    transmit: int = 0

    def encode(self) -> bytes:
        if not (0 <= self.leap <= 3 and 0 <= self.version <= 7 and 0 <= self.mode <= 7):
            raise BadPacket("leap 0-3, version 0-7 and mode 0-7 are 2, 3 and 3 bits")
        if len(self.ref_id) != 4:
            raise BadPacket("the reference ID is 4 bytes")
        return _HEADER.pack(
            (self.leap << 6) | (self.version << 3) | self.mode,
            self.stratum,
            self.poll,
            self.precision,
            _short(self.root_delay),
            _short(self.root_dispersion),
            self.ref_id,
            self.reference,
            self.origin,
            self.receive,
            self.transmit,
        )

    @classmethod
    def decode(cls, data: bytes) -> Packet:
        """The header at the start of ``data`` (what follows it is not read)."""
        if len(data) < NTP_PACKET_LEN:
            raise BadPacket(f"{len(data)} bytes, an NTP header is {NTP_PACKET_LEN}")
        first, stratum, poll, precision, delay, disp, ref_id, ref, org, rec, xmt = (
            _HEADER.unpack_from(data)
        )
        return cls(
            leap=first >> 6,
            version=(first >> 3) & 7,
            mode=first & 7,
            stratum=stratum,
            poll=poll,
            precision=precision,
            root_delay=delay / 65536,
            root_dispersion=disp / 65536,
            ref_id=ref_id,
            reference=ref,
            origin=org,
            receive=rec,
            transmit=xmt,
        )

    @property
    def kiss_code(self) -> str | None:
        """A kiss-o'-death's code (stratum 0: ``RATE``, ``DENY``, ...); None for other replies."""
        if self.mode != MODE_SERVER or self.stratum != 0:
            return None
        return self.ref_id.decode("ascii", "replace").rstrip("\0") or "?"
