#!/usr/bin/env python3
"""The reference BTHome v2 parse, for DoseTap's differential tests.

Runs the pinned `bthome-ble` package (see reference-requirements.txt; set up by
scripts/bthome-reference.sh) over adverts given as JSON lines on stdin and prints one JSON line per
input on stdout, in order, flushing after each line.

Input line:  {"id": 7, "mac": "A4:C1:38:8D:18:B2", "data": "40003a01", "bindkey": "231d...",
              "device": "d1", "time": 12.5}
  - data: the service data under UUID 0000fcd2-... (the device-info byte first), hex.
  - bindkey: optional, 32 hex digits.
  - device: optional. Lines with the same device share one BTHomeBluetoothDeviceData (packet-id and
    counter state carry over); without it every line gets a fresh one. A later line of the same
    device with a different bindkey sets that key on it (set_bindkey), as a user adding a key would.
  - time: optional advert time in seconds (any epoch); default 1709331995.5.

A line {"op": "version"} answers {"outcome": "version", "version": "3.25.0"} (the installed
bthome-ble). A line {"op": "ccm", "id": 1, "key": hex, "nonce": hex, "aad": hex, "plaintext": hex,
"tag_length": 4} is sealed with AES-CCM by the `cryptography` package instead:
{"id": 1, "outcome": "sealed", "sealed": ciphertext+tag hex}.

Output line: {"id": 7, "outcome": "parsed" | "rejected", "reason": null | "...",
              "events": {"button": "press", ...}, "buttons": [[0, "press"], ...],
              "battery": 94 | null, "sensors": {...}, "binary": {...},
              "encrypted": true | false, "stopped": null | "unknown_object_id" | "truncated_object",
              "out_of_order": false, "counter": 1234 | null,
              "state": {"packet_id": 33 | null, "last_time": 12.5 | null, "counter": 0,
                        "bindkey_verified": false}}
  - reason (rejected): "downgrade", "bad_version", "encrypted_without_key", "bad_key_length",
    "replayed_counter", "truncated", "mic_mismatch", "duplicate_packet", "duplicate_advert",
    "no_objects", "decrypt_error", or "exception:<Type>".
  - buttons: the button events with their button index (0-based, in object order), from the
    library's event keys ("button" or "button_1", "button_2", ...).

The library is observed, never changed: its own methods are wrapped only to record which check
stopped an advert, and its log records are read to learn why object parsing stopped. The per-update
sensor dictionaries are cleared before each update because the library accumulates them across
updates (events it clears itself).
"""

from __future__ import annotations

import json
import logging
import sys
from importlib.metadata import version
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESCCM
from habluetooth import BluetoothServiceInfoBleak

from bthome_ble.parser import BTHomeBluetoothDeviceData, EncryptionScheme

UUID = "0000fcd2-0000-1000-8000-00805f9b34fb"
DEFAULT_TIME = 1709331995.5


class Recorder(logging.Handler):
    """Collects the parser's log messages of the current advert."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a log record must never break the driver
            self.messages.append(str(record.msg))


RECORDER = Recorder()
_logger = logging.getLogger("bthome_ble.parser")
_logger.setLevel(logging.DEBUG)
_logger.addHandler(RECORDER)
_logger.propagate = False


class Observed(BTHomeBluetoothDeviceData):
    """The library's device data with its checks observed (decisions unchanged)."""

    def __init__(self, bindkey: bytes | None) -> None:
        super().__init__(bindkey=bindkey)
        self.reason: str | None = None
        self.version_ok = False
        self.payload_result: bool | None = None

    def begin(self) -> None:
        self.reason = None
        self.version_ok = False
        self.payload_result = None
        self._sensor_values_updates.clear()
        self._binary_sensor_values_updates.clear()
        self._sensor_descriptions_updates.clear()
        self._binary_sensor_descriptions_updates.clear()

    def _note(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def _is_same_as_last(self, service_info):  # type: ignore[override]
        same = super()._is_same_as_last(service_info)
        if same:
            self._note("duplicate_advert")
        return same

    def _set_bthome_version(self, bthome_data) -> None:  # type: ignore[override]
        self.version_ok = True
        super()._set_bthome_version(bthome_data)

    def _check_bind_key(self) -> None:
        try:
            super()._check_bind_key()
        except ValueError:
            self._note("encrypted_without_key" if not self.bindkey else "bad_key_length")
            raise

    def _check_encryption_counter(self, new_encryption_counter: float) -> None:
        try:
            super()._check_encryption_counter(new_encryption_counter)
        except ValueError:
            self._note("replayed_counter")
            raise

    def _check_minimum_length(self, bthome_data, payload: bytes) -> None:  # type: ignore[override]
        try:
            super()._check_minimum_length(bthome_data, payload)
        except ValueError:
            self._note("truncated")
            raise

    def _handle_decryption_error(self, error, encrypted_payload, nonce, mic) -> None:  # type: ignore[override]
        self._note("mic_mismatch")
        super()._handle_decryption_error(error, encrypted_payload, nonce, mic)

    def _decrypt_bthome(self, bthome_data) -> bytes:  # type: ignore[override]
        try:
            return super()._decrypt_bthome(bthome_data)
        except (ValueError, TypeError):
            self._note("decrypt_error")  # only if no more specific check above said why
            raise

    def _skip_old_or_duplicated_advertisement(self, new_packet_id, adv_time):  # type: ignore[override]
        skip = super()._skip_old_or_duplicated_advertisement(new_packet_id, adv_time)
        if skip:
            self._note("duplicate_packet")
        return skip

    def _parse_payload(self, payload: bytes, adv_time: float) -> bool:
        result = super()._parse_payload(payload, adv_time)
        self.payload_result = result
        return result


def button_index(key: str) -> int | None:
    if key == "button":
        return 0
    if key.startswith("button_"):
        try:
            return int(key[len("button_"):]) - 1
        except ValueError:
            return None
    return None


def plain(value: Any) -> Any:
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value
    return str(value)


def run_one(request: dict[str, Any], devices: dict[str, Observed]) -> dict[str, Any]:
    data = bytes.fromhex(request["data"])
    bindkey = bytes.fromhex(request["bindkey"]) if request.get("bindkey") else None
    key = request.get("device")
    device = devices.get(key) if key is not None else None
    if device is None:
        device = Observed(bindkey)
        if key is not None:
            devices[key] = device
    elif device.bindkey != bindkey:
        device.set_bindkey(bindkey)  # the key was set (or changed) later, as a user would
    device.begin()
    RECORDER.messages.clear()

    info = BluetoothServiceInfoBleak(
        name="DoseTap reference",
        address=request.get("mac", "00:00:00:00:00:00"),
        rssi=-60,
        manufacturer_data={},
        service_data={UUID: data},
        service_uuids=[UUID],
        source="dosetap",
        device=None,
        advertisement=None,
        connectable=False,
        time=float(request.get("time", DEFAULT_TIME)),
        tx_power=None,
    )
    out: dict[str, Any] = {"id": request.get("id")}
    try:
        update = device.update(info)
    except Exception as error:  # noqa: BLE001 - an exception is a result the tests compare
        out.update(outcome="rejected", reason=f"exception:{type(error).__name__}", events={},
                   buttons=[], battery=None, sensors={}, binary={}, encrypted=None,
                   stopped=None, out_of_order=False, counter=None, state=state_of(device))
        return out

    reason = device.reason
    if reason is None and device.downgrade_detected:
        reason = "downgrade"
    if reason is None and not device.version_ok:
        reason = "bad_version"
    if reason is None and device.payload_result is False:
        reason = "no_objects"

    events = {str(k.key): e.event_type for k, e in update.events.items()}
    buttons = sorted(
        [button_index(k), t] for k, t in events.items() if button_index(k) is not None
    )
    sensors = {
        str(k.key): plain(v.native_value)
        for k, v in update.entity_values.items()
        if k.key != "signal_strength"
    }
    binary = {str(k.key): plain(v.native_value) for k, v in update.binary_entity_values.items()}
    battery = sensors.get("battery", sensors.get("battery_1"))

    text = "\n".join(RECORDER.messages)
    stopped = None
    if "Invalid Object ID found" in text:
        stopped = "unknown_object_id"
    elif "Invalid payload data length" in text or "Truncated payload" in text:
        stopped = "truncated_object"

    counter = None
    if device.encryption_scheme == EncryptionScheme.BTHOME_BINDKEY and len(data) >= 8:
        counter = int.from_bytes(data[-8:-4], "little")

    out.update(
        outcome="rejected" if reason else "parsed",
        reason=reason,
        events=events,
        buttons=buttons,
        battery=battery,
        sensors=sensors,
        binary=binary,
        encrypted=device.encryption_scheme == EncryptionScheme.BTHOME_BINDKEY,
        stopped=stopped,
        out_of_order="not sending object ids in numerical order" in text,
        counter=counter,
        state=state_of(device),
    )
    return out


def state_of(device: Observed) -> dict[str, Any]:
    """The library's replay-protection state after the advert."""
    last = device.last_service_info
    return {
        "packet_id": None if device.packet_id is None else int(device.packet_id),
        "last_time": None if last is None else last.time,
        "counter": int(device.encryption_counter),
        "bindkey_verified": bool(device.bindkey_verified),
    }


def run_ccm(request: dict[str, Any]) -> dict[str, Any]:
    """AES-CCM through the `cryptography` package (OpenSSL), for the CCM differential test."""
    cipher = AESCCM(bytes.fromhex(request["key"]), tag_length=int(request["tag_length"]))
    aad = bytes.fromhex(request.get("aad", ""))
    sealed = cipher.encrypt(bytes.fromhex(request["nonce"]), bytes.fromhex(request["plaintext"]),
                            aad if aad else None)
    return {"id": request.get("id"), "outcome": "sealed", "sealed": sealed.hex()}


def main() -> int:
    devices: dict[str, Observed] = {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            if request.get("op") == "version":
                result = {"id": request.get("id"), "outcome": "version", "version": version("bthome-ble")}
            elif request.get("op") == "ccm":
                result = run_ccm(request)
            else:
                result = run_one(request, devices)
        except Exception as error:  # noqa: BLE001 - a bad input line is reported, not fatal
            result = {"id": None, "outcome": "error", "reason": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
