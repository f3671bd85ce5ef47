#!/usr/bin/env python3
"""Turns recorded upstream test adverts into hw-fixtures/bthome/bthome-ble-vectors.json.

    make_vectors.py record.json > ../bthome-ble-vectors.json

Each recorded test becomes a sequence of steps on one device; each step's "expect" is what the
pinned reference (reference.py, bthome-ble 3.25.0) reports for it, replayed in order on one device
with the recorded bindkey, MAC and time. The upstream tests passed with these inputs (the two
exceptions are flagged), so the expectations are the ones those tests assert, plus the fields they
do not look at. The two bthome.io encryption examples (tests/test_v2_encryption.py) are appended.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import reference  # noqa: E402

UPSTREAM = {
    "repository": "https://github.com/Bluetooth-Devices/bthome-ble",
    "tag": "3.20.0",
    "commit": "d55bd3aea0808b37ce5fbd8b0a2e2063c15836bf",
}
NOTES = {
    "test_same_encryption_counter": "Upstream 3.20.0 rejected an equal encryption counter; 3.25.0 accepts it "
    "(Shelly and pvvx firmware resend one counter, bthome-ble issues #99 and #386), so this upstream test "
    "fails on the pinned version. The expectations are 3.25.0's.",
    "test_decreasing_encryption_counter": "Fails upstream on 3.25.0 only because the log wording changed "
    "('is smaller than'); the decision (advert skipped) is the same.",
}
SPEC = [
    {
        "name": "bthome.io encryption example 1 (temperature + humidity)",
        "source": "https://bthome.io/encryption/ and bthome-ble tests/test_v2_encryption.py::test_encryption_example_1",
        "note": "Plaintext 02CA09 03BF13, counter 0x33221100 (bytes 00112233), MAC 5448E68F80A5, key 231d...b932; nonce 5448e68f80a5d2fc4100112233.",
        "mac": "54:48:E6:8F:80:A5",
        "data": "41a47266c95f730011223378237214",
        "bindkey": "231d39c1d7cc1ab1aee224cd096db932",
    },
    {
        "name": "bthome.io encryption example 2 (motion)",
        "source": "bthome-ble tests/test_v2_encryption.py::test_encryption_example_2",
        "note": "Plaintext 2101 (motion detected), same key, MAC and counter as example 1.",
        "mac": "54:48:E6:8F:80:A5",
        "data": "4187b90011223372b0231f",
        "bindkey": "231d39c1d7cc1ab1aee224cd096db932",
    },
]


def main() -> None:
    record = json.load(open(sys.argv[1]))
    tests = []
    for test in record:
        devices: dict = {}
        steps = []
        for call in test["calls"]:
            if call["kind"] != "advert" or call["data"] is None:
                continue
            request = {"mac": call["mac"], "data": call["data"], "bindkey": call["bindkey"],
                       "time": call["time"], "device": test["test"]}
            result = reference.run_one(request, devices)
            expect = {k: result[k] for k in ("outcome", "reason", "buttons", "battery", "sensors",
                                             "binary", "stopped", "out_of_order", "state")}
            steps.append({"mac": call["mac"], "data": call["data"], "bindkey": call["bindkey"],
                          "time": call["time"], "name": call["name"], "expect": expect})
        if not steps:
            continue
        entry = {"name": test["test"], "source": f"bthome-ble {UPSTREAM['tag']} tests/test_parser_v2.py::{test['test']}",
                 "upstream_passed_on_reference": test["passed"], "steps": steps}
        if test["test"] in NOTES:
            entry["note"] = NOTES[test["test"]]
        tests.append(entry)
    for spec in SPEC:
        request = {"mac": spec["mac"], "data": spec["data"], "bindkey": spec["bindkey"], "time": 1000.0,
                   "device": spec["name"]}
        result = reference.run_one(request, {})
        expect = {k: result[k] for k in ("outcome", "reason", "buttons", "battery", "sensors", "binary",
                                         "stopped", "out_of_order", "state")}
        tests.append({"name": spec["name"], "source": spec["source"], "note": spec["note"],
                      "upstream_passed_on_reference": True,
                      "steps": [{"mac": spec["mac"], "data": spec["data"], "bindkey": spec["bindkey"],
                                 "time": 1000.0, "name": "", "expect": expect}]})
    json.dump({
        "about": "Published BTHome v2 vectors: every advert bthome-ble's own v2 test suite feeds its parser, "
                 "in order per test, plus the bthome.io encryption examples. 'expect' is the reference "
                 "parse (bthome-ble 3.25.0 through reference.py) of each step on one device.",
        "upstream": UPSTREAM,
        "reference": "bthome-ble==3.25.0",
        "tests": tests,
    }, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
