"""A CronJob's next run, read as the CronJob controller reads its schedule (robfig/cron's
standard parser): named cases, and any five-field schedule against a minute-by-minute scan."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis.cron import next_run, parse

SUNDAY = datetime(2026, 12, 6, 3, 3, 15, tzinfo=timezone.utc)  # a Sunday


@pytest.mark.parametrize(
    "schedule, zone, expected",
    [
        ("* * * * *", None, "2026-12-06T03:04"),
        ("*/5 * * * *", None, "2026-12-06T03:05"),
        ("5/15 * * * *", None, "2026-12-06T03:05"),  # A/N runs from A to the field's end
        ("0 3 * * *", None, "2026-12-07T03:00"),
        ("0 0 * * 0", None, "2026-12-13T00:00"),
        ("@weekly", None, "2026-12-13T00:00"),
        ("@hourly", None, "2026-12-06T04:00"),
        ("@yearly", None, "2027-01-01T00:00"),
        ("30 2 1 * MON", None, "2026-12-07T02:30"),  # both days restricted: either matches
        ("30 2 1-7 * *", None, "2026-12-07T02:30"),
        ("30 2 ? * mon", None, "2026-12-07T02:30"),
        ("0 12 * JAN-MAR/2 *", None, "2027-01-01T12:00"),
        ("0 9 * * *", "Europe/Berlin", "2026-12-06T08:00"),
        ("TZ=America/New_York 0 0 * * *", None, "2026-12-06T05:00"),
        ("0 0 */1 * MON", None, "2026-12-07T00:00"),  # a step of 1 is still *: Mondays only
        ("@DAILY", None, None),  # the parser's descriptors are lower case
        ("CRON_TZ=UTC 0 4 * * *", None, "2026-12-06T04:00"),
        ("0 0 30 2 *", None, None),  # never
        ("0 0 * * 7", None, None),  # the parser's days of the week end at 6
        ("@every 1h", None, None),  # counted from the last run: not timed here
        ("61 * * * *", None, None),
        ("* * * *", None, None),
        ("0 9 * * *", "Mars/Olympus", None),
    ],
)
def test_the_next_run_is_the_first_scheduled_minute_after_now(
    schedule: str, zone: str | None, expected: str | None
) -> None:
    got = next_run(schedule, zone or "UTC", SUNDAY)  # a zone named: read in it
    assert (got.strftime("%Y-%m-%dT%H:%M") if got else None) == expected


def _matches(fields: list[str], t: datetime) -> bool:
    """The schedule's fields matched by `t`, read without the parser (lists of numbers and
    stars only): day of month and day of week as cron ORs or ANDs them."""

    def hit(field: str, value: int) -> bool:
        return field == "*" or value in {int(v) for v in field.split(",")}

    minute, hour, dom, month, dow = fields
    days = [hit(dom, t.day), hit(dow, (t.weekday() + 1) % 7)]
    day = all(days) if "*" in (dom, dow) else any(days)
    return hit(minute, t.minute) and hit(hour, t.hour) and hit(month, t.month) and day


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    values = st.lists(st.integers(low, high), min_size=1, max_size=3, unique=True)
    return st.one_of(st.just("*"), values.map(lambda vs: ",".join(map(str, vs))))


@settings(max_examples=200, deadline=None)
@given(
    fields=st.tuples(_field(0, 59), _field(0, 23), _field(1, 31), st.just("*"), _field(0, 6)),
    start=st.datetimes(
        min_value=datetime(2026, 1, 1),
        max_value=datetime(2027, 12, 31),
        timezones=st.just(timezone.utc),
    ),
)
def test_any_schedule_agrees_with_a_minute_by_minute_scan(
    fields: tuple[str, ...], start: datetime
) -> None:
    got = next_run(" ".join(fields), "UTC", start)
    t = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for _ in range(60 * 24 * 9):  # every day of the week and of most months within 9 days
        if _matches(list(fields), t):
            assert got == t
            return
        t += timedelta(minutes=1)
    assert got is None or got > t


def test_a_parsed_schedule_is_cached() -> None:
    assert parse("*/5 * * * *") is parse("*/5 * * * *")


def test_a_schedule_that_never_comes_is_told_from_one_not_read_here() -> None:
    """February 30th parses and never runs; @every and an unknown zone are not read here."""
    from kubectl_nodefail.analysis.cron import never_runs

    assert never_runs("0 0 30 2 *", None, SUNDAY)
    assert not never_runs("@every 1h", None, SUNDAY)
    assert not never_runs("0 9 * * *", "Mars/Olympus", SUNDAY)
    assert not never_runs("* * * * *", None, SUNDAY)


@pytest.mark.parametrize(
    "schedule, timed",
    [
        ("* * * * *", True),
        ("*/5 * * * *", True),
        ("*/15 * * * *", True),  # every zone's offset is a whole number of quarter hours
        ("7 * * * *", False),  # a half-hour zone runs it at :37 UTC
        ("0 3 * * *", False),
        ("@hourly", False),
    ],
)
def test_without_a_time_zone_a_run_is_timed_only_when_every_zone_agrees(
    schedule: str, timed: bool
) -> None:
    """No spec.timeZone: kube-controller-manager reads the schedule in its own zone, not known
    here, so the run is timed only when the zone cannot move it."""
    assert (next_run(schedule, None, SUNDAY) is not None) == timed
    assert next_run(schedule, "Etc/UTC", SUNDAY) is not None


def test_an_hour_the_clocks_repeat_is_met_twice() -> None:
    """America/New_York, 2024-11-03: 01:00-01:59 comes twice (EDT, then EST), as in the parser's
    own search."""
    edt = datetime(2024, 11, 3, 5, 50, tzinfo=timezone.utc)  # 01:50 EDT
    got = next_run("*/15 * * * *", "America/New_York", edt)
    assert got == datetime(2024, 11, 3, 6, 0, tzinfo=timezone.utc)  # 01:00 EST
    got = next_run("30 1 * * *", "America/New_York", edt - timedelta(minutes=10))
    assert got == datetime(2024, 11, 3, 6, 30, tzinfo=timezone.utc)  # 01:30 EST


def test_a_digit_python_reads_as_one_and_the_parser_does_not_is_refused() -> None:
    assert next_run("\u00b2 * * * *", "UTC", SUNDAY) is None
