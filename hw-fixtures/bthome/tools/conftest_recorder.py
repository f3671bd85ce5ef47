"""pytest plugin: records every advert bthome-ble's own test suite feeds to the parser.

Used once to turn the upstream tests into data (see make_vectors.py and ../README.md). Copy it as
conftest.py next to the upstream tests, run pytest with RECORD_OUT=record.json; each test's adverts
(with the device's bindkey, MAC and time at that moment) and whether the test passed are written out.
"""
import json, os
import pytest
from bthome_ble import parser as P

RECORD = []
CURRENT = {"test": None, "calls": []}
UUID = "0000fcd2-0000-1000-8000-00805f9b34fb"

orig_start = P.BTHomeBluetoothDeviceData._start_update
orig_setkey = P.BTHomeBluetoothDeviceData.set_bindkey

def start(self, service_info):
    data = service_info.service_data.get(UUID)
    CURRENT["calls"].append(dict(kind="advert", device=id(self), bindkey=self.bindkey.hex() if self.bindkey else None,
        mac=service_info.address, time=service_info.time, name=service_info.name,
        data=data.hex() if data is not None else None, other_uuids=[u for u in service_info.service_data if u != UUID]))
    return orig_start(self, service_info)

def setkey(self, bindkey):
    CURRENT["calls"].append(dict(kind="set_bindkey", device=id(self), bindkey=bindkey.hex() if bindkey else None))
    return orig_setkey(self, bindkey)

P.BTHomeBluetoothDeviceData._start_update = start
P.BTHomeBluetoothDeviceData.set_bindkey = setkey

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    CURRENT["test"] = item.name
    CURRENT["calls"] = []
    outcome = yield
    passed = outcome.excinfo is None
    RECORD.append(dict(test=item.name, passed=passed, calls=CURRENT["calls"]))

def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["RECORD_OUT"], "w") as f:
        json.dump(RECORD, f, indent=1)
