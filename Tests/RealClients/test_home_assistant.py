"""DoseTap in a real Home Assistant (#27): Home Assistant Core from PyPI (scripts/home-assistant-venv.sh),
a real mosquitto on a free loopback port, onboarding and the MQTT integration set up through HA's own REST
API as its frontend does, and the real `dosetap agent` with `[home_assistant]` on. Everything is asserted
through HA: its states, its services, its log. Nothing here is skipped.

Run alone: DOSETAP_BIN=.build/debug/dosetap scripts/real-clients-tests.sh home-assistant"""

import asyncio
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import paho.mqtt.client as mqtt
import pytest
import voluptuous as vol

from realclients import free_port, wait_for

BIN = os.environ["DOSETAP_BIN"]
DEVICE = "Test-Laptop"          # upper case on purpose: entity ids are lower case
NODE = "dosetap_Test-Laptop"    # HomeAssistantTopics.node: the discovery topic's node level
BUTTON = "A4:C1:38:0B:1D:2E"


class HomeAssistant:
    """HA Core in a config folder of its own: `http`, `api`, `config`, `onboarding` and the MQTT integration."""

    def __init__(self, work, broker_port):
        self.config = work / "ha"
        self.config.mkdir()
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        (self.config / "configuration.yaml").write_text(f"""\
homeassistant:
  name: DoseTap test
  time_zone: UTC
  latitude: 0
  longitude: 0
  elevation: 0
  unit_system: metric
  country: GB
  currency: EUR
http:
  server_host: 127.0.0.1
  server_port: {self.port}
api:
config:
onboarding:
logger:
  default: info
""")
        # --skip-pip: every requirement is in the venv already; HA must not install anything at run time.
        self.out = open(work / "ha.out", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "homeassistant", "-c", str(self.config), "--skip-pip", "--log-no-color"],
            stdout=self.out, stderr=subprocess.STDOUT)
        wait_for("Home Assistant's onboarding API", self._onboarding_up, timeout=180, every=0.5)
        client = self.base + "/"
        user = self.request("POST", "/api/onboarding/users", {
            "client_id": client, "name": "Test", "username": "test", "password": "test-password-27", "language": "en"})
        token = self.request("POST", "/auth/token", {
            "grant_type": "authorization_code", "code": user["auth_code"], "client_id": client}, form=True)
        self.token = token["access_token"]
        flow = self.request("POST", "/api/config/config_entries/flow", {"handler": "mqtt"})
        assert flow["step_id"] == "broker", flow
        entry = self.request("POST", f"/api/config/config_entries/flow/{flow['flow_id']}",
                             {"broker": "127.0.0.1", "port": broker_port})
        assert entry["type"] == "create_entry" and entry["result"]["state"] == "loaded", entry

    def _onboarding_up(self):
        assert self.process.poll() is None, "Home Assistant exited:\n" + self.log()[-4000:]
        try:
            return self.request("GET", "/api/onboarding", auth=False)
        except (urllib.error.URLError, ConnectionError, OSError):
            return None

    def request(self, method, path, body=None, form=False, auth=True):
        headers = {}
        data = None
        if body is not None:
            if form:
                data = urllib.parse.urlencode(body).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        if auth and getattr(self, "token", None):
            headers["Authorization"] = "Bearer " + self.token
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def states(self):
        return {s["entity_id"]: s for s in self.request("GET", "/api/states") if "dosetap" in s["entity_id"]}

    def state(self, entity):
        return self.states().get(entity, {}).get("state")

    def press(self, entity):
        self.request("POST", "/api/services/button/press", {"entity_id": entity})

    def log(self):
        path = self.config / "home-assistant.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Agent:
    def __init__(self, work, broker_port):
        self.home = work / "home"
        config = self.home / "config" / "dosetap"
        config.mkdir(parents=True)
        (self.home / "run").mkdir(mode=0o700)
        (config / "config.toml").write_text(f"""\
[household]
name = "Test family"
device = "{DEVICE}"

[mqtt]
url = "mqtt://127.0.0.1:{broker_port}"

[home_assistant]
enabled = true
buttons = ["take", "snooze", "stop"]

[web]
listen = []
""")
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TZ": "UTC", "NO_COLOR": "1",
            "XDG_DATA_HOME": str(self.home / "data"), "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_RUNTIME_DIR": str(self.home / "run"), "DOSETAP_UPOWER_DIR": str(self.home / "upower"),
            "DOSETAP_AUDIO_DEVICE": "null",
        }
        self.cli("button", "add", BUTTON, "--kind", "bthome", "--name", "Nightstand")
        self.log_file = open(self.home / "agent.log", "w+")
        self.process = subprocess.Popen([BIN, "agent"], env=self.env, stdout=self.log_file, stderr=subprocess.STDOUT)
        wait_for("the agent's broker connection", lambda: "household broker connected" in self.log(), timeout=60)

    def cli(self, *args):
        r = subprocess.run([BIN, *args], env=self.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"dosetap {' '.join(args)}: {r.stderr}"
        return r.stdout

    def log(self):
        self.log_file.flush()
        return (self.home / "agent.log").read_text(errors="replace")

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def world():
    work = pathlib.Path(tempfile.mkdtemp(prefix="dosetap-ha-"))
    broker_port = free_port()
    (work / "mosquitto.conf").write_text(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\n")
    broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", str(work / "mosquitto.conf")],
                              stdout=open(work / "mosquitto.log", "w"), stderr=subprocess.STDOUT)
    agent = ha = None
    try:
        # The agent first, as on a machine where DoseTap runs before Home Assistant is set up: HA must
        # find the retained discovery, states and availability when its MQTT integration arrives.
        agent = Agent(work, broker_port)
        # An alarm on the real clock, about a minute out: it rings while the other tests run.
        now = time.time()
        at = (int(now // 60) + (2 if now % 60 > 35 else 1)) * 60
        agent.cli("alarm", "add", time.strftime("%H:%M", time.gmtime(at)), "--label", "HA test")
        ha = HomeAssistant(work, broker_port)
        yield {"work": work, "agent": agent, "ha": ha, "broker_port": broker_port, "alarm_at": at}
    finally:
        if agent:
            agent.kill()
        if ha:
            ha.stop()
        broker.terminate()
        broker.wait()
        print(f"\nwork folder: {work}")


def entity_ids():
    button = "button_" + BUTTON.lower().replace(":", "")
    return {
        eid("sensor", "phase"): ("Tonight's phase", None),
        eid("sensor", "minutes_left"): ("Minutes left for Dose 2", "duration"),
        eid("sensor", "alarm_risk"): ("Battery risk at the next alarm", None),
        eid("sensor", "battery"): ("Battery", "battery"),
        eid("sensor", f"{button}_battery"): ("Nightstand battery", "battery"),
        eid("binary_sensor", "alarm_ringing"): ("Alarm ringing", None),
        eid("binary_sensor", "data_problem"): ("Cannot save data", "problem"),
        eid("sensor", "last_command"): ("Last command from Home Assistant", None),
        eid("button", "take"): ("Take dose", None),
        eid("button", "snooze"): ("Snooze", None),
        eid("button", "stop"): ("Stop alarm", None),
    }


def wait_for_states(ha, want, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        states = ha.states()
        now = {e: states.get(e, {}).get("state") for e in want}
        if now == want:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"states in HA: {now}, wanted {want}")
        time.sleep(0.2)


def eid(domain, obj):
    """The entity id DoseTap suggests: the unique id, slugified as HA does (lower case, `-` → `_`)."""
    return f"{domain}.{NODE}_{obj}".lower().replace("-", "_")


def test_every_entity_exists_with_its_domain_id_and_state(world):
    ha = world["ha"]
    expected = entity_ids()
    states = wait_for("every DoseTap entity in Home Assistant",
                      lambda: (lambda s: s if set(expected) <= set(s) else None)(ha.states()))
    assert set(states) == set(expected), sorted(states)
    for entity, (name, device_class) in expected.items():
        attributes = states[entity]["attributes"]
        assert attributes["friendly_name"] == f"DoseTap {DEVICE} {name}", (entity, attributes)
        assert attributes.get("device_class") == device_class, (entity, attributes)
    # States as the agent published them, none unavailable (availability: the household's presence topic).
    want = {eid("sensor", "phase"): "idle", eid("sensor", "minutes_left"): "unknown",
            # No battery here (a machine on mains): the alarm is safe, as `dosetap alarm list` says.
            eid("sensor", "alarm_risk"): "safe", eid("sensor", "battery"): "unknown",
            eid("binary_sensor", "alarm_ringing"): "off", eid("binary_sensor", "data_problem"): "off",
            eid("button", "take"): "unknown"}
    wait_for_states(ha, want)
    # The data can be written (#51): the problem sensor is off, its attributes say no cause.
    problem = ha.states()[eid("binary_sensor", "data_problem")]["attributes"]
    assert problem.get("cause") is None and "message" in problem, problem
    assert not [e for e, s in ha.states().items() if s["state"] == "unavailable"]
    assert states[eid("sensor", "battery")]["attributes"]["unit_of_measurement"] == "%"
    assert states[eid("sensor", "minutes_left")]["attributes"]["unit_of_measurement"] == "min"


def retained_configs(broker_port):
    """Every retained discovery config of this agent, as a late subscriber (HA after a restart) receives it."""
    configs = {}
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="dosetap-ha-test-reader")
    client.on_message = lambda c, u, m: configs.__setitem__(m.topic, json.loads(m.payload)) if m.payload else None
    client.connect("127.0.0.1", broker_port)
    client.subscribe(f"homeassistant/+/{NODE}/+/config")
    client.loop_start()
    time.sleep(1.5)
    client.loop_stop()
    client.disconnect()
    return configs


async def validate_in_home_assistant(schemas, configs):
    """HA's validators (templates among them) run inside a HomeAssistant instance, as in HA itself."""
    from homeassistant.core import HomeAssistant
    from homeassistant.helpers import frame
    hass = HomeAssistant(tempfile.mkdtemp(prefix="dosetap-ha-schema-"))
    frame.async_setup(hass)
    failures = []
    for topic, config in configs.items():
        try:
            schemas[topic.split("/")[1]](dict(config))
        except vol.Invalid as error:
            failures.append(f"{topic}: {error}")
    await hass.async_stop(force=True)
    return failures


def test_every_discovery_key_is_one_home_assistant_knows(world):
    """HA drops an unknown or misspelt key without a word: validate each config with HA's own discovery schema
    for its platform, made strict. `default_entity_id` is known to HA from 2025.10 (it replaces `object_id`,
    removed in 2026.4); this HA (2025.4) ignores it, so it is the one key allowed beyond the schema."""
    from homeassistant.components.mqtt import binary_sensor, button, sensor
    extra = {vol.Optional("default_entity_id"): str}
    schemas = {
        # The sensor's schema is its base (a vol.Schema) followed by a check of device class against unit.
        "sensor": vol.All(sensor._PLATFORM_SCHEMA_BASE.extend(extra, extra=vol.PREVENT_EXTRA),
                          sensor.validate_sensor_state_and_device_class_config),
        "binary_sensor": binary_sensor.PLATFORM_SCHEMA_MODERN.extend(extra, extra=vol.PREVENT_EXTRA),
        "button": button.PLATFORM_SCHEMA_MODERN.extend(extra, extra=vol.PREVENT_EXTRA),
    }
    configs = retained_configs(world["broker_port"])
    assert len(configs) == len(entity_ids()), sorted(configs)
    failures = asyncio.run(validate_in_home_assistant(schemas, configs))
    assert not failures, "\n".join(failures)
    for topic, config in configs.items():
        component = topic.split("/")[1]
        object_part = config["default_entity_id"].split(".", 1)[1]
        assert config["default_entity_id"] == f"{component}.{object_part}" and config["object_id"] == object_part, config
        assert config["device"]["name"] == f"DoseTap {DEVICE}", config


def test_take_in_home_assistant_records_dose_1_through_the_dose_policy(world):
    ha, agent = world["ha"], world["agent"]
    ha.press(eid("button", "take"))
    status = wait_for("Dose 1 recorded", lambda: (lambda s: s if s.get("dose1At") else None)(
        json.loads(agent.cli("dose", "status", "--json"))))
    assert status["phase"] == "waiting", status
    assert status["lastAction"]["kind"] == "dose1" and status["lastAction"]["source"] == "mqtt", status
    wait_for("the phase in HA", lambda: ha.state(eid("sensor", "phase")) == "waiting")
    wait_for("the answer in HA", lambda: (ha.state(eid("sensor", "last_command")) or "").startswith("Take dose: Dose 1 "))


def test_take_outside_the_window_is_refused_and_shown_as_refused(world):
    ha, agent = world["ha"], world["agent"]
    before = json.loads(agent.cli("dose", "status", "--json"))
    time.sleep(1.1)  # presses less than a second apart are dropped unanswered (a flood guard)
    ha.press(eid("button", "take"))
    answer = wait_for("the refusal in HA", lambda: (lambda s: s if (s or "").startswith("Take dose: Refused: ") else None)(
        ha.state(eid("sensor", "last_command"))))
    assert "Dose 2" in answer, answer
    after = json.loads(agent.cli("dose", "status", "--json"))
    assert after["lastAction"] == before["lastAction"] and after["dose2At"] is None, after
    assert "Home Assistant press refused" in agent.log()


def test_an_alarm_ringing_flips_the_binary_sensor_and_stop_in_home_assistant_ends_it(world):
    ha, agent = world["ha"], world["agent"]
    ringing = eid("binary_sensor", "alarm_ringing")
    assert ha.state(ringing) == "off"
    wait_for("the alarm ringing in HA", lambda: ha.state(ringing) == "on",
             timeout=max(5.0, world["alarm_at"] - time.time() + 30), every=0.25)
    time.sleep(1.1)
    ha.press(eid("button", "stop"))
    wait_for("the ring ended in HA", lambda: ha.state(ringing) == "off", timeout=15)
    assert re.search(r"Stop alarm: .*", ha.state(eid("sensor", "last_command")) or ""), ha.state(eid("sensor", "last_command"))
    # Ended by Home Assistant's press, not by the ring's own timeout.
    assert re.search(r"by=mqtt .*\] alarm stopped", agent.log()), agent.log()[-2000:]


def test_nothing_about_dosetap_in_home_assistants_log(world):
    """At INFO and above, the only lines naming DoseTap are HA registering its entities: no unknown key, no
    device without a name, no rejected config, no template error."""
    log = world["ha"].log()
    lines = [line for line in log.splitlines()
             if re.match(r"^\S+ \S+ (INFO|WARNING|ERROR|CRITICAL) ", line) and re.search("dosetap", line, re.I)]
    registered = re.compile(r"\[homeassistant\.helpers\.entity_registry\] Registered new (sensor|binary_sensor|button)\.mqtt entity: \S*dosetap")
    unexpected = [line for line in lines if not registered.search(line)]
    assert not unexpected, "\n".join(unexpected)
    assert len(lines) == len(entity_ids()), "\n".join(lines)


def test_agent_gone_makes_every_entity_unavailable_through_its_last_will(world):
    ha, agent = world["ha"], world["agent"]
    agent.kill()  # SIGKILL: no goodbye, only the broker's last will
    wait_for("every DoseTap entity unavailable",
             lambda: all(s["state"] == "unavailable" for s in ha.states().values()), timeout=30)
