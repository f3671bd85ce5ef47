import DoseTapApp
import DoseTapCore
import Foundation
import DoseTapVersion

/// The topics of one agent in Home Assistant (docs/home-assistant.md): discovery configs under the discovery
/// prefix, states and commands under `dosetap/<household>/ha/<device>/`, availability on the household's
/// peer topic (the heartbeat and the broker-sent last will of `HouseholdService`).
public struct HomeAssistantTopics: Sendable, Equatable {
    public let prefix: String
    public let household: String
    public let device: String

    public init(prefix: String, identity: HouseholdIdentity) {
        self.prefix = prefix
        household = identity.topic
        device = identity.device
    }

    /// The device as one discovery-topic level and id part: `[A-Za-z0-9_-]` (a device name may hold a dot).
    public var node: String {
        "dosetap_" + String(String.UnicodeScalarView(device.unicodeScalars.map { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_") ? scalar : "_"
        }))
    }

    /// Where this agent's states and commands live.
    public var base: String { HouseholdTopic.homeAssistantRoot(household: household) + device }
    public var availability: String { HouseholdTopic.peer(device: device).topic(household: household) }
    public func state(_ name: String) -> String { "\(base)/\(name)" }
    public func command(_ button: HomeAssistantButton) -> String { "\(base)/command/\(button.rawValue)" }
    public var commands: String { "\(base)/command/" }
    public func config(_ component: HomeAssistantEntity.Component, _ object: String) -> String {
        "\(prefix)/\(component.rawValue)/\(node)/\(object)/config"
    }
    /// Every discovery config of this agent (to find retained ones of entities that no longer exist).
    public var configs: String { "\(prefix)/+/\(node)/+/config" }
}

/// One Home Assistant entity and its discovery config.
public struct HomeAssistantEntity: Sendable {
    public enum Component: String, Sendable, CaseIterable {
        case sensor
        case binarySensor = "binary_sensor"
        case button
    }

    public var component: Component
    /// The object id: unique within this device's node.
    public var object: String
    /// The discovery config (JSON, keys in order).
    public var config: JSON

    public var configTopicObject: (Component, String) { (component, object) }
}

/// The pure part of the discovery: which entities, with which configs, and how states are spelled.
public enum HomeAssistantDiscovery {
    /// The software version in each device block: this binary's (`dosetap --version`).
    public static let softwareVersion = DoseTapVersion.version
    /// The payload of every button (`payload_press`): any other payload on a command topic is refused.
    public static let press = "PRESS"
    public static let on = "ON"
    public static let off = "OFF"
    /// An unknown numeric state (no window tonight, no battery, a button not heard from yet).
    public static let unknown = "None"
    /// HA's limit for a state.
    public static let maximumState = 255

    /// State topics (under `HomeAssistantTopics.base`).
    public enum State {
        public static let phase = "phase"
        public static let minutesLeft = "minutes_left"
        public static let alarmRisk = "alarm_risk"
        public static let alarmRinging = "alarm_ringing"
        public static let dataProblem = "data_problem"
        public static let dataProblemAttributes = "data_problem/attributes"
        public static let battery = "battery/system"
        public static let lastCommand = "last_command"
        public static func buttonBattery(_ button: ButtonConfig) -> String { "battery/\(buttonObject(button))" }
    }

    /// The "Cannot save data" sensor's attributes (#51): the cause (`full`, `locked`, `readOnly`, `ioError`, `damaged`,
    /// `other`) and the sentence every face shows; both null while the data can be written.
    public static func dataProblemAttributes(_ problem: StoreProblem?, sentence: String?) -> JSON {
        .object([("cause", problem.map { .string($0.rawValue) } ?? .null),
                 ("message", problem == nil ? .null : sentence.map { .string(DisplayText.escaped($0, maxLength: 400)) } ?? .null)])
    }

    /// A BLE button as an id part: its address's hex digits, lower case (stable across renames).
    public static func buttonObject(_ button: ButtonConfig) -> String {
        "button_" + button.address.lowercased().filter { $0 != ":" }
    }

    static func device(_ topics: HomeAssistantTopics) -> JSON {
        .object([
            ("identifiers", .array([.string(topics.node)])),
            ("name", .string("DoseTap \(topics.device)")),
            ("manufacturer", .string("DoseTap")),
            ("model", .string("DoseTap agent for Linux")),
            ("sw_version", .string(softwareVersion)),
        ])
    }

    static func availability(_ topics: HomeAssistantTopics) -> JSON {
        // The peer topic carries {"state":"online","at":…} (the heartbeat) and {"state":"offline"} (the clean
        // goodbye and the last will): the template takes the state out for comparison.
        .array([.object([
            ("topic", .string(topics.availability)),
            ("value_template", .string("{{ value_json.state }}")),
            ("payload_available", .string("online")),
            ("payload_not_available", .string("offline")),
        ])])
    }

    /// The entity id's object part: the unique id as Home Assistant slugifies it (lower case, `-` → `_`), so
    /// `sensor.dosetap_jen_laptop_phase` rather than one made from the names (which a rename would change).
    public static func entityObject(_ topics: HomeAssistantTopics, object: String) -> String {
        "\(topics.node)_\(object)".lowercased().replacingOccurrences(of: "-", with: "_")
    }

    /// The keys every entity shares. The entity id is suggested twice, for the Home Assistant versions on either
    /// side of a rename: `object_id` (until 2026.3; deprecated from 2025.10, removed in 2026.4, and ignored from
    /// then on) and `default_entity_id` (from 2025.10, which prefers it; earlier versions drop the unknown key).
    /// Both say the same, so an entity gets the same id whichever version first sees it (docs/home-assistant.md).
    private static func common(_ topics: HomeAssistantTopics, component: HomeAssistantEntity.Component, object: String, name: String) -> [(String, JSON)] {
        let entity = entityObject(topics, object: object)
        return [("name", .string(name)), ("unique_id", .string("\(topics.node)_\(object)")),
                ("object_id", .string(entity)), ("default_entity_id", .string("\(component.rawValue).\(entity)"))]
    }

    private static func tail(_ topics: HomeAssistantTopics) -> [(String, JSON)] {
        [("availability", availability(topics)), ("device", device(topics))]
    }

    static func sensor(_ topics: HomeAssistantTopics, object: String, name: String, state: String,
                       deviceClass: String? = nil, unit: String? = nil, stateClass: String? = nil) -> HomeAssistantEntity {
        var fields = common(topics, component: .sensor, object: object, name: name)
        fields.append(("state_topic", .string(topics.state(state))))
        if let deviceClass { fields.append(("device_class", .string(deviceClass))) }
        if let unit { fields.append(("unit_of_measurement", .string(unit))) }
        if let stateClass { fields.append(("state_class", .string(stateClass))) }
        return HomeAssistantEntity(component: .sensor, object: object, config: .object(fields + tail(topics)))
    }

    /// Every entity of this agent now: the fixed sensors, one battery sensor per BLE button, the binary sensor,
    /// the buttons exposed.
    public static func entities(_ topics: HomeAssistantTopics, buttons: Set<HomeAssistantButton>, bleButtons: [ButtonConfig]) -> [HomeAssistantEntity] {
        var out: [HomeAssistantEntity] = [
            sensor(topics, object: "phase", name: "Tonight's phase", state: State.phase),
            sensor(topics, object: "minutes_left", name: "Minutes left for Dose 2", state: State.minutesLeft,
                   deviceClass: "duration", unit: "min", stateClass: "measurement"),
            sensor(topics, object: "alarm_risk", name: "Battery risk at the next alarm", state: State.alarmRisk),
            sensor(topics, object: "battery", name: "Battery", state: State.battery, deviceClass: "battery", unit: "%", stateClass: "measurement"),
        ]
        for button in bleButtons.sorted(by: { $0.address < $1.address }) {
            let name = DisplayText.escaped(button.name, maxLength: 40)
            out.append(sensor(topics, object: buttonObject(button) + "_battery", name: "\(name) battery", state: State.buttonBattery(button),
                              deviceClass: "battery", unit: "%", stateClass: "measurement"))
        }
        var ringing = common(topics, component: .binarySensor, object: "alarm_ringing", name: "Alarm ringing")
        ringing += [("state_topic", .string(topics.state(State.alarmRinging))), ("payload_on", .string(on)), ("payload_off", .string(off))]
        out.append(HomeAssistantEntity(component: .binarySensor, object: "alarm_ringing", config: .object(ringing + tail(topics))))
        var problem = common(topics, component: .binarySensor, object: "data_problem", name: "Cannot save data")
        problem += [("state_topic", .string(topics.state(State.dataProblem))), ("payload_on", .string(on)), ("payload_off", .string(off)),
                    ("device_class", .string("problem")), ("json_attributes_topic", .string(topics.state(State.dataProblemAttributes)))]
        out.append(HomeAssistantEntity(component: .binarySensor, object: "data_problem", config: .object(problem + tail(topics))))
        if !buttons.isEmpty {
            out.append(sensor(topics, object: "last_command", name: "Last command from Home Assistant", state: State.lastCommand))
        }
        for button in buttons.sorted() {
            var fields = common(topics, component: .button, object: button.rawValue, name: buttonName(button))
            fields += [("command_topic", .string(topics.command(button))), ("payload_press", .string(press))]
            out.append(HomeAssistantEntity(component: .button, object: button.rawValue, config: .object(fields + tail(topics))))
        }
        return out
    }

    public static func buttonName(_ button: HomeAssistantButton) -> String {
        switch button {
        case .take: "Take dose"
        case .snooze: "Snooze"
        case .stop: "Stop alarm"
        }
    }

    /// The risk at the next enabled alarm: `safe`, `warning`, `critical`, `unknown` (no battery reading, no
    /// drain known) or `none` (no enabled alarm).
    public static func risk(_ risk: BatteryRisk?, hasAlarm: Bool) -> String {
        guard hasAlarm else { return "none" }
        return risk?.rawValue ?? "unknown"
    }

    /// A state as HA keeps it: one line, escaped, at most 255 characters.
    public static func stateText(_ text: String) -> String {
        DisplayText.escaped(text, maxLength: 200)
    }
}
