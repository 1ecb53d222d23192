"""Findings and plans as the user reads them: the table (table, outageview), --explain
(explain, incident, timeline_view), -o json / yaml (data), -o markdown, the plan's text
(plantext, zoneview), printed commands (pastable). A new output format goes here."""
