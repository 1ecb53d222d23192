"""Dump timestamps are read the same on every Python the plugin runs on (3.9+): RFC 3339 as the
API server writes and reads it, a fraction of any length (cut to microseconds), Z or an offset.
datetime.fromisoformat alone took only 3 or 6 fraction digits on 3.9 and 3.10."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.snapshot.dumpschema import parse_rfc3339

MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(timezone.utc)
)
OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)


@given(when=MOMENTS, digits=st.integers(min_value=0, max_value=9), offset=OFFSETS, z=st.booleans())
def test_every_fraction_length_and_zone_reads_the_same_instant(
    when: datetime, digits: int, offset: int, z: bool
) -> None:
    zone = timezone(timedelta(minutes=0 if z else offset))
    local = when.astimezone(zone)
    nanos = f"{local.microsecond:06d}000"[:digits]
    sign = "-" if offset < 0 else "+"
    suffix = "Z" if z else f"{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    seconds = f"{local.year:04d}-" + local.strftime("%m-%dT%H:%M:%S")  # %Y: no padding < 1000
    text = seconds + (f".{nanos}" if digits else "") + suffix
    expected = when.replace(microsecond=int(f"{nanos:0<6}"[:6]) if digits else 0)
    assert parse_rfc3339(text) == expected


def test_what_is_not_rfc_3339_is_refused() -> None:
    for text in (
        "2024-01-01",  # no time
        "2024-01-01T00:00:00",  # no zone
        "2024-01-01 00:00:00Z",  # a space for the T
        "2024-01-01T00:00Z",  # no seconds
        "2024-01-01T00:00:00.Z",  # a dot without digits
        "20240101T000000Z",  # ISO 8601 basic form (3.11's fromisoformat takes it)
        "2024-02-30T00:00:00Z",  # no such day
        "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
        "\uff12\uff10\uff12\uff14-01-01T00:00:00Z",  # full-width digits
    ):
        assert parse_rfc3339(text) is None, text
