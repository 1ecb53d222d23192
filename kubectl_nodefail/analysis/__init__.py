"""Pure analysis: functions over a Snapshot and `now`. No network, clock or terminal here."""
