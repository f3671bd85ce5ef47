"""Parses a calendar written by `dosetap export ics` with the icalendar package (PyPI) and prints what a
calendar app would see, as one JSON object, for Tests/DoseTapCLITests/ExportCLITests.swift.

    .venv-ical/bin/python hw-fixtures/ical/check-ics.py FILE

Each event: uid, summary, the TZID of DTSTART/DTEND (null for a UTC time), start and end in UTC, the
alarms (action, trigger in seconds from the start, description). Each VTIMEZONE is also turned into a
tzinfo of its own (icalendar's to_tz) and every event time is read again with it: `vtimezoneMismatches`
lists the times where our VTIMEZONE and the system's zoneinfo disagree (must be empty).
"""
import datetime
import json
import sys
import zoneinfo

import icalendar

raw = open(sys.argv[1], "rb").read()
calendar = icalendar.Calendar.from_ical(raw)
utc = datetime.timezone.utc


def seconds(delta):
    return int(delta.total_seconds())


zones = {tz["TZID"]: tz.to_tz() for tz in calendar.walk("VTIMEZONE")}
events = []
mismatches = []
for event in calendar.walk("VEVENT"):
    out = {"uid": str(event["UID"]), "summary": str(event["SUMMARY"]),
           "description": str(event.get("DESCRIPTION", "")), "dtstamp": event.decoded("DTSTAMP").astimezone(utc).isoformat()}
    for name in ("DTSTART", "DTEND"):
        value = event.decoded(name)
        tzid = event[name].params.get("TZID")
        out[name.lower() + "Tzid"] = tzid
        out[name.lower()] = value.astimezone(utc).isoformat()
        if tzid is not None:
            naive = value.replace(tzinfo=None)
            ours = naive.replace(tzinfo=zones[tzid]).astimezone(utc)
            try:
                system = naive.replace(tzinfo=zoneinfo.ZoneInfo(tzid)).astimezone(utc)
            except Exception:
                system = ours
            if ours != system:
                mismatches.append({"uid": out["uid"], "field": name, "ours": ours.isoformat(), "zoneinfo": system.isoformat()})
    out["alarms"] = [{"action": str(a["ACTION"]), "trigger": seconds(a.decoded("TRIGGER")), "description": str(a["DESCRIPTION"])}
                     for a in event.walk("VALARM")]
    events.append(out)

print(json.dumps({"version": icalendar.__version__, "prodid": str(calendar["PRODID"]),
                  "timezones": sorted(zones), "events": events, "vtimezoneMismatches": mismatches}, sort_keys=True))
