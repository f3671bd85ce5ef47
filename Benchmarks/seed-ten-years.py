#!/usr/bin/env python3
"""Adds ten years of nights (3,650 from 2016-01-01, Dose 1 and Dose 2 or a skip each) to a dosetap
database the binary has created (`dosetap setup --show` makes it), as the store writes them.
Used by dose-latency.sh and oneshot-vs-sqlite.sh.   Usage: seed-ten-years.py DOSETAP.SQLITE"""
import sqlite3, sys, uuid, json, datetime, random

if len(sys.argv) != 2:
    sys.exit(__doc__)
con = sqlite3.connect(sys.argv[1])
random.seed(7)
start = datetime.datetime(2016, 1, 1, 22, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=-5)))
rows = []
for n in range(3650):
    d1 = start + datetime.timedelta(days=n, minutes=random.randint(-60, 60))
    rows.append((str(uuid.uuid4()).upper(), "dose1", d1.timestamp(), "America/New_York", "cli", json.dumps({"targetMinutes": 165})))
    if n % 17 == 0:
        rows.append((str(uuid.uuid4()).upper(), "skip", d1.timestamp() + 3600, "America/New_York", "cli", json.dumps({"reason": "alert"})))
    else:
        rows.append((str(uuid.uuid4()).upper(), "dose2", d1.timestamp() + 60 * random.randint(150, 239), "America/New_York", "button", json.dumps({"late": False})))
con.executemany("INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (?, ?, ?, ?, ?, ?)", rows)
con.commit()
print(f"seeded {len(rows)} events", file=sys.stderr)
