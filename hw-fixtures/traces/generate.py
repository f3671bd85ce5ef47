#!/usr/bin/env python3
"""Generates the battery discharge traces in this directory (deterministic).

    python3 hw-fixtures/traces/generate.py          # rewrites *.csv and *.meta.json here

Each trace is what a 60 s poller of /sys/class/power_supply/<bat>/ would have logged:

    seconds,capacity,energy_now_uwh,energy_full_uwh,power_now_uw,status

- seconds: time since the first sample (monotonic clock); one row per 60 s, except
  across a suspend, where simply no rows exist.
- energy_now_uwh follows the *true* energy exactly (a straight line per segment),
  quantised to 1 mWh (1000 µWh) as ACPI firmware reports it.
- capacity is what the kernel prints: floor(energy_now * 100 / energy_full) of the
  reported (quantised) values; for the capacity-only trace, floor(true level).
- power_now_uw is the true power plus mean-zero sensor noise (Gaussian, ~7 % sigma,
  with an occasional +/- burst), quantised to 1 mW. The noise does not drain the
  battery: the energy column, not power_now, defines the truth.
- status is the kernel string ("Discharging").
- An empty field means the battery does not report that value.

The true drain (percent of energy_full per hour) for every interval is written to
NAME.meta.json as {"trueDrainPercentPerHour": [[fromSeconds, toSeconds, value], ...]}.
Standard library only; Fraction arithmetic so the output does not depend on floats.
"""
import csv
import json
import os
import random
from fractions import Fraction as F

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = ["seconds", "capacity", "energy_now_uwh", "energy_full_uwh", "power_now_uw", "status"]
STEP = 60


def floor_half(x):
    """Round a Fraction to the nearest integer, halves up (exact)."""
    return (x + F(1, 2)).__floor__()


def noisy_power(rng, true_uw):
    """Sensor reading of a power draw: ~7 % Gaussian noise, plus a 3 % chance of a
    reading taken during a short load spike or lull (+/- 25..60 %). Mean zero."""
    factor = 1.0 + rng.gauss(0.0, 0.07)
    if rng.random() < 0.03:
        factor += rng.choice((-1, 1)) * rng.uniform(0.25, 0.60)
    factor = max(0.2, factor)
    return int(round(float(true_uw) * factor / 1000.0)) * 1000


def energy_trace(name, seed, full_uwh, start_pct, segments, description):
    """segments: list of (from_s, to_s, drain_pct_per_h, sampled).  Unsampled segments
    are suspend gaps: the battery loses energy but nobody logs."""
    rng = random.Random(seed)
    rows = []
    energy = F(full_uwh) * F(start_pct) / 100          # true energy at segment start, µWh
    last_t = None
    for (t0, t1, drain, sampled) in segments:
        watts_uw = F(full_uwh) * F(drain) / 100          # µW  (drain %/h of full per hour)
        if sampled:
            t = t0 if last_t is None or last_t < t0 else t0 + STEP
            while t <= t1:
                e_true = energy - watts_uw * F(t - t0, 3600)
                e_rep = floor_half(e_true / 1000) * 1000
                cap = (e_rep * 100) // full_uwh
                rows.append([t, cap, e_rep, full_uwh, noisy_power(rng, watts_uw), "Discharging"])
                last_t = t
                t += STEP
        energy -= watts_uw * F(t1 - t0, 3600)
    write(name, rows, segments, description)


def capacity_trace(name, start_pct, segments, description):
    rows = []
    level = F(start_pct)
    last_t = None
    for (t0, t1, drain, sampled) in segments:
        t = t0 if last_t is None or last_t < t0 else t0 + STEP
        while sampled and t <= t1:
            true_level = level - F(drain) * F(t - t0, 3600)
            rows.append([t, true_level.__floor__(), "", "", "", "Discharging"])
            last_t = t
            t += STEP
        level -= F(drain) * F(t1 - t0, 3600)
    write(name, rows, segments, description)


def write(name, rows, segments, description):
    with open(os.path.join(HERE, name + ".csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        w.writerows(rows)
    meta = {
        "description": description,
        "trueDrainPercentPerHour": [[t0, t1, float(d)] for (t0, t1, d, _) in segments],
        "gapsWithoutSamples": [[t0, t1] for (t0, t1, _, s) in segments if not s],
        "rows": len(rows),
    }
    lines = ["{"]
    items = list(meta.items())
    for i, (k, v) in enumerate(items):
        lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v), "," if i < len(items) - 1 else ""))
    lines.append("}")
    with open(os.path.join(HERE, name + ".meta.json"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%-15s %4d rows" % (name, len(rows)))


def main():
    energy_trace(
        "steady-drain", 1101, 50_000_000, 85,
        [(0, 4 * 3600, F(8), True)],
        "50 Wh battery, steady 8 %/h (4.0 W) for 4 h, from 85 % to 53 %.")
    energy_trace(
        "load-change", 2202, 50_200_000, 90,
        [(0, 5400, F(6), True), (5400, 10800, F(20), True)],
        "50.2 Wh battery: 6 %/h (3.012 W) for 90 min, then 20 %/h (10.04 W) for 90 min; "
        "from 90 % to 81 % to 51 %. The sample at 5400 s still reads the old load.")
    energy_trace(
        "suspend-gap", 3303, 60_000_000, 70,
        [(0, 3600, F(10), True), (3600, 21600, F(2, 5), False), (21600, 25200, F(10), True)],
        "60 Wh battery: 10 %/h (6 W) for 60 min (70 % -> 60 %), then suspended for 5 h with "
        "no samples, losing 2 % in total (0.4 %/h), then 10 %/h again for 60 min "
        "(58 % -> 48 %). A naive slope across the gap would read ~0.4 %/h or mix both.")
    capacity_trace(
        "capacity-only", 95.5,
        [(0, 5 * 3600, F(7), True)],
        "UPS board reporting only an integer capacity: true level 95.5 % falling at 7 %/h "
        "for 5 h (to 60.5 %); capacity = floor(true level), so it steps down 1 % "
        "every ~8.6 min (514 s). energy/power columns are empty.")


if __name__ == "__main__":
    main()
