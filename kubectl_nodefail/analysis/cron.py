"""When a CronJob runs next, read from its schedule as the CronJob controller reads it.

The controller (pkg/controller/cronjob/cronjob_controllerv2.go) parses `spec.schedule` with
robfig/cron's standard parser, prefixed `TZ=ZONE` when `spec.timeZone` is set, and wakes at the
first scheduled time after the last one it met: the next run is the first scheduled minute after
now. The standard parser takes five fields (minute, hour, day of month, month, day of week),
each `*` or `?`, a number or name (JAN-DEC, SUN-SAT, any case), a range `A-B`, a step `/N`
(`A/N` runs from A to the field's end) and lists of those; day of month and day of week both
restricted means either matches, one of them `*` means both must; and the descriptors @yearly,
@annually, @monthly, @weekly, @daily, @midnight, @hourly. What this module does not read
(@every, whose times count from the last run; a zone this machine's tz database lacks; anything
the parser would reject) gives None: the run is then not timed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone, tzinfo

# Field bounds, in the parser's order.
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_MONTHS = dict(zip(("jan", "feb", "mar", "apr", "may", "jun"), range(1, 7)))
_MONTHS.update(zip(("jul", "aug", "sep", "oct", "nov", "dec"), range(7, 13)))
_DAYS = dict(zip(("sun", "mon", "tue", "wed", "thu", "fri", "sat"), range(7)))
_NAMES: tuple[dict[str, int], ...] = ({}, {}, {}, _MONTHS, _DAYS)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
HORIZON = timedelta(days=366 * 5)  # the parser gives up after five years as well


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 Sunday
    any_day: bool  # day of month was * or ?
    any_weekday: bool  # day of week was * or ?
    zone: tzinfo
    zoned: bool = True  # the zone is named (spec.timeZone, a TZ= prefix), not assumed UTC

    def _day_matches(self, t: datetime) -> bool:
        dom = t.day in self.days
        dow = (t.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next_after(self, moment: datetime) -> datetime | None:
        """The first scheduled minute strictly after `moment`, in UTC; None past the horizon.
        Minutes are stepped in UTC and read in the zone, so an hour a daylight-saving change
        repeats is met twice, and one it skips never, as the parser's own search does."""
        t = moment.astimezone(timezone.utc).replace(second=0, microsecond=0)
        t += timedelta(minutes=1)
        end = t + HORIZON
        while t < end:
            local = t.astimezone(self.zone)
            if local.month not in self.months:
                first = (local.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                t = _after(t, first, self.zone)
            elif not self._day_matches(local):
                t = _after(t, local.replace(hour=0, minute=0) + timedelta(days=1), self.zone)
            elif local.hour not in self.hours:
                t = _after(t, local.replace(minute=0) + timedelta(hours=1), self.zone)
            elif local.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        return None


def _after(t: datetime, wall: datetime, zone: tzinfo) -> datetime:
    """The UTC minute a wall-clock time of the zone starts at, never before `t` + 1 minute."""
    at = wall.replace(tzinfo=None).replace(tzinfo=zone).astimezone(timezone.utc)
    return max(at, t + timedelta(minutes=1))


def _field(text: str, index: int) -> tuple[frozenset[int], bool] | None:
    """One field's values, and whether it was * or ? (a step over them is not)."""
    low, high = _BOUNDS[index]
    values: set[int] = set()
    star = False
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        bounds = span.split("-")
        if bounds[0] in ("*", "?") and len(bounds) == 1:
            start, end = low, high
            star = star or not step_text or step_text == "1"  # a step of 1 is still *
        else:
            numbers = [n for n in (_number(b, index) for b in bounds) if n is not None]
            if len(numbers) != len(bounds) or len(numbers) > 2:
                return None
            start = numbers[0]
            end = numbers[-1] if len(numbers) == 2 or not step_text else high
        step = 1
        if step_text:
            if not _digits(step_text) or int(step_text) == 0:
                return None
            step = int(step_text)
        if start < low or end > high or start > end:
            return None
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def _number(text: str, index: int) -> int | None:
    named = _NAMES[index].get(text.lower())
    if named is not None:
        return named
    return int(text) if _digits(text) else None


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # "²".isdigit() is True


@functools.lru_cache(maxsize=256)
def parse(schedule: str, zone_name: str | None = None) -> Schedule | None:
    """The schedule as the controller reads it (spec.schedule, spec.timeZone), or None."""
    text = schedule.strip()
    zone: tzinfo = timezone.utc
    if text.startswith(("TZ=", "CRON_TZ=")):
        prefix, _, text = text.partition(" ")
        zone_name = prefix.partition("=")[2]
        text = text.strip()
    if zone_name:
        loaded = _zone(zone_name)
        if loaded is None:
            return None
        zone = loaded
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            return None  # @every, or one the parser rejects
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        return None
    read = [r for r in (_field(f, i) for i, f in enumerate(fields)) if r is not None]
    if len(read) != 5:
        return None
    (mins, _), (hours, _), (days, any_day), (months, _), (weekdays, any_weekday) = read
    zoned = zone_name is not None
    return Schedule(mins, hours, days, months, weekdays, any_day, any_weekday, zone, zoned)


def _zone(name: str) -> tzinfo | None:
    if name in ("UTC", "Etc/UTC"):
        return timezone.utc
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:  # an unknown zone, or no tz database: not timed
        return None


# Every UTC offset a zone has had, in quarter hours: where the CronJob names no zone, the
# controller reads its schedule in kube-controller-manager's own, which is not known here.
OFFSETS = tuple(timezone(timedelta(minutes=m)) for m in range(-12 * 60, 14 * 60 + 1, 15))


@functools.lru_cache(maxsize=256)
def _first(schedule: str, zone_name: str | None, after: datetime) -> tuple[bool, datetime | None]:
    """Whether the schedule is read here, and its first run after `after` (in its zone, UTC
    when it names none): one scan, shared by next_run and never_runs."""
    parsed = parse(schedule, zone_name)
    return parsed is not None, parsed.next_after(after) if parsed is not None else None


def _strings(schedule: object, zone_name: object) -> bool:
    return isinstance(schedule, str) and (zone_name is None or isinstance(zone_name, str))


@functools.lru_cache(maxsize=256)
def next_run(schedule: str | None, zone_name: str | None, after: datetime) -> datetime | None:
    """The CronJob's first scheduled run after `after` (UTC), or None when not read here: a
    schedule not parsed here (@every, an unknown zone), or one without a zone whose next run
    depends on the zone kube-controller-manager runs in ("0 3 * * *"; "*/5 * * * *" does not)."""
    if not _strings(schedule, zone_name):
        return None
    parsed = parse(str(schedule), zone_name)
    if parsed is None:
        return None
    when = _first(str(schedule), zone_name, after)[1]
    if when is None or parsed.zoned:
        return when
    if all(replace(parsed, zone=zone).next_after(after) == when for zone in OFFSETS):
        return when
    return None


def never_runs(schedule: str | None, zone_name: str | None, after: datetime) -> bool:
    """The schedule is read here and names no time in the parser's five-year reach (February 30):
    the controller never runs it either."""
    if not _strings(schedule, zone_name):
        return False
    read, when = _first(str(schedule), zone_name, after)
    return read and when is None
