import Foundation

/// Why a message from the household's broker was dropped (logged once per reason and sender).
public struct HouseholdMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The household's topics (#12), all under `dosetap/<household>/`:
/// - `peer/<device>`: an agent's presence, retained; its MQTT last will says `offline`.
/// - `plan/<owner>/<alarm>`: an alarm's coming occurrences and backup list, retained (empty: withdrawn).
/// - `answer/<sender>/<owner>/<alarm>/<occurrence>/stop|snooze`: a Stop or the latest Snooze of one occurrence by
///   `sender`, retained. The sender is in the topic so that the broker's ACL binds it to the user that published
///   (`answer/%u/#`); an answer whose `by` is not the topic's sender is dropped.
/// - `claim/<owner>/<alarm>/<occurrence>/<target>/<slot>`: who sends a push or call slot, retained.
/// Occurrences and slots are whole seconds since 1970.
public enum HouseholdTopic: Sendable, Equatable, Hashable {
    case peer(device: String)
    case plan(owner: String, alarmID: Int)
    case answer(OccurrenceKey, kind: CascadeAnswer.Kind, by: String)
    case claim(SlotKey)

    /// The household's name as one topic level: lower-case ASCII letters and digits, anything else a dash
    /// ("Jen's family" → `jen-s-family`); `home` when none is set.
    public static func slug(_ household: String?) -> String {
        guard let household, !household.isEmpty else { return "home" }
        var out = ""
        for scalar in household.lowercased().unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                out.unicodeScalars.append(scalar)
            } else if !out.hasSuffix("-") {
                out += "-"
            }
        }
        let trimmed = out.trimmingCharacters(in: CharacterSet(charactersIn: "-"))
        if !trimmed.isEmpty { return String(trimmed.prefix(64)) }
        // A name with no ASCII letter at all: its UTF-8 bytes in hex, so two such households differ.
        return "h" + household.utf8.prefix(24).map { String(format: "%02x", $0) }.joined()
    }

    /// The cascade's topics, one subscription per kind. Not `dosetap/<household>/#`: that would also match Home
    /// Assistant's topics under `ha/`, and the broker delivers a message once per matching subscription of a
    /// client, so every Home Assistant press reached an agent that follows both twice (#26).
    public static func subscriptions(household: String) -> [String] {
        ["peer", "plan", "answer", "claim"].map { "dosetap/\(household)/\($0)/#" }
    }

    /// Home Assistant's state and command topics of every device live under here (docs/home-assistant.md):
    /// not messages of the cascade, which leaves them alone.
    public static func homeAssistantRoot(household: String) -> String { "dosetap/\(household)/ha/" }

    public func topic(household: String) -> String {
        let base = "dosetap/\(household)"
        switch self {
        case .peer(let device): return "\(base)/peer/\(device)"
        case .plan(let owner, let alarm): return "\(base)/plan/\(owner)/\(alarm)"
        case .answer(let key, let kind, let by): return "\(base)/answer/\(by)/\(key.owner)/\(key.alarmID)/\(key.at)/\(kind.rawValue)"
        case .claim(let slot):
            return "\(base)/claim/\(slot.occurrence.owner)/\(slot.occurrence.alarmID)/\(slot.occurrence.at)/\(slot.target)/\(slot.at)"
        }
    }

    /// Parses a topic of `household`; throws for one that is not a household topic this version knows.
    public init(parsing topic: String, household: String) throws(HouseholdMessageError) {
        let prefix = "dosetap/\(household)/"
        guard topic.hasPrefix(prefix) else { throw HouseholdMessageError("not a topic of this household") }
        let parts = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        func device(_ text: String) throws(HouseholdMessageError) -> String {
            do { return try BackupTarget.deviceName(text) } catch { throw HouseholdMessageError("a device name that is not valid") }
        }
        func number(_ text: String) throws(HouseholdMessageError) -> Int64 {
            guard !text.isEmpty, text.count <= 12, text.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }), let value = Int64(text),
                  value >= HouseholdLimits.earliest, value <= HouseholdLimits.latest else {
                throw HouseholdMessageError("a time that is not whole seconds between 2000 and 2200")
            }
            return value
        }
        func small(_ text: String, below limit: Int) throws(HouseholdMessageError) -> Int {
            guard !text.isEmpty, text.count <= 9, text.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }), let value = Int(text), value < limit else {
                throw HouseholdMessageError("a number out of range")
            }
            return value
        }
        switch (parts.first, parts.count) {
        case ("peer", 2):
            self = .peer(device: try device(parts[1]))
        case ("plan", 3):
            self = .plan(owner: try device(parts[1]), alarmID: try small(parts[2], below: Int(Int32.max)))
        case ("answer", 6):
            guard let kind = CascadeAnswer.Kind(rawValue: parts[5]) else { throw HouseholdMessageError("an answer that is neither stop nor snooze") }
            let sender = try device(parts[1])
            self = .answer(OccurrenceKey(owner: try device(parts[2]), alarmID: try small(parts[3], below: Int(Int32.max)), at: try number(parts[4])),
                           kind: kind, by: sender)
        case ("claim", 6):
            let key = OccurrenceKey(owner: try device(parts[1]), alarmID: try small(parts[2], below: Int(Int32.max)), at: try number(parts[3]))
            self = .claim(SlotKey(occurrence: key, target: try small(parts[4], below: HouseholdLimits.maximumTargets), at: try number(parts[5])))
        default:
            throw HouseholdMessageError("a topic this version does not know")
        }
    }
}

/// Bounds on what the broker may send.
public enum HouseholdLimits {
    public static let maximumPayload = 16 * 1024
    public static let maximumTargets = 32
    public static let maximumOccurrences = 16
    public static let maximumLabel = 200
    /// 2000-01-01 … 2200-01-01.
    public static let earliest: Int64 = 946_684_800
    public static let latest: Int64 = 7_258_118_400
}

/// An agent's presence: `online` (with the time it was sent, every heartbeat) or `offline` (its last will,
/// or a clean stop).
public struct PeerMessage: Sendable, Equatable, Codable {
    public var state: String
    public var at: Int64?
    public init(online at: Int64) {
        state = "online"
        self.at = at
    }
    public static let offline = PeerMessage(state: "offline", at: nil)
    init(state: String, at: Int64?) {
        self.state = state
        self.at = at
    }
    public var isOnline: Bool { state == "online" }
}

/// An alarm's plan, published by its owner ahead of time: the next occurrences and the backup list.
public struct PlanMessage: Sendable, Equatable, Codable {
    public var v: Int
    public var label: String
    /// "05:30", as the alarm shows it.
    public var time: String
    public var occurrences: [Int64]
    public var targets: [String]

    /// The targets as the household may read them (`BackupTarget.published`: no secret of a push URL).
    public init(label: String, time: String, occurrences: [Int64], targets: [BackupTarget]) {
        v = 1
        self.label = label
        self.time = time
        self.occurrences = occurrences
        self.targets = targets.map(\.published.description)
    }
}

/// A Stop or a Snooze of one occurrence: by whom, when, and on which target (nil: the primary alarm).
public struct AnswerMessage: Sendable, Equatable, Codable {
    public var by: String
    public var at: Int64
    public var target: Int?

    public init(by: String, at: Int64, target: Int?) {
        self.by = by
        self.at = at
        self.target = target
    }
}

/// Who takes a push or call slot, and whether it was sent.
public struct ClaimMessage: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable { case claimed, sent, failed }
    public var by: String
    public var at: Int64
    public var state: State

    public init(by: String, at: Int64, state: State) {
        self.by = by
        self.at = at
        self.state = state
    }
}

/// A message from the broker, parsed and checked (`HouseholdMessage.parse`).
public enum HouseholdMessage: Sendable, Equatable {
    case peer(device: String, PeerMessage)
    /// A withdrawn plan (the alarm was removed, turned off, or its backups turned off) has no occurrences.
    case plan(owner: String, alarmID: Int, KnownPlan?)
    case answer(CascadeAnswer)
    case claim(SlotKey, SlotClaim)

    /// Parses one message of `household`. Anything malformed, oversized, or naming a device that cannot be
    /// a member throws; the caller logs it once and drops it.
    public static func parse(topic: String, payload: [UInt8], household: String) throws(HouseholdMessageError) -> HouseholdMessage {
        let parsed = try HouseholdTopic(parsing: topic, household: household)
        guard payload.count <= HouseholdLimits.maximumPayload else { throw HouseholdMessageError("a message over 16 KiB") }
        switch parsed {
        case .peer(let device):
            let message: PeerMessage = try decode(payload)
            guard message.state == "online" || message.state == "offline" else { throw HouseholdMessageError("a presence that is neither online nor offline") }
            if let at = message.at { try checkTime(at) }
            return .peer(device: device, message)
        case .plan(let owner, let alarmID):
            if payload.isEmpty { return .plan(owner: owner, alarmID: alarmID, nil) }
            let message: PlanMessage = try decode(payload)
            guard message.v == 1 else { throw HouseholdMessageError("a plan of version \(message.v)") }
            guard message.label.count <= HouseholdLimits.maximumLabel else { throw HouseholdMessageError("a label over 200 characters") }
            guard (try? TimeOfDay(parsing: message.time)) != nil else { throw HouseholdMessageError("a plan whose time is not HH:MM") }
            guard message.occurrences.count <= HouseholdLimits.maximumOccurrences, message.targets.count <= HouseholdLimits.maximumTargets,
                  !message.targets.isEmpty else {
                throw HouseholdMessageError("a plan with no targets, or too many occurrences or targets")
            }
            for at in message.occurrences { try checkTime(at) }
            var targets: [BackupTarget] = []
            for text in message.targets {
                guard let target = try? BackupTarget(parsing: text) else { throw HouseholdMessageError("a plan with a target that is not valid") }
                guard !targets.contains(target) else { throw HouseholdMessageError("a plan naming a target twice") }
                if case .device(let name) = target, name == owner { throw HouseholdMessageError("a plan naming its owner as a backup") }
                targets.append(target)
            }
            return .plan(owner: owner, alarmID: alarmID, KnownPlan(label: message.label, time: message.time,
                                                                   occurrences: Array(Set(message.occurrences)).sorted(), targets: targets))
        case .answer(let key, let kind, let sender):
            let message: AnswerMessage = try decode(payload)
            let by = try member(message.by)
            // The broker's ACL lets a device write only under its own name: the name inside must be that one.
            guard by == sender else { throw HouseholdMessageError("an answer whose sender is not the device of its topic") }
            try checkTime(message.at)
            if let target = message.target, !(0..<HouseholdLimits.maximumTargets).contains(target) {
                throw HouseholdMessageError("an answer naming a target out of range")
            }
            // Not compared with the occurrence here: the sender's clock may be behind the owner's. `HouseholdInbox.judge`
            // reads both on this machine's clock.
            if kind == .stop, message.target.map({ $0 < 0 }) == true { throw HouseholdMessageError("an answer naming a target out of range") }
            return .answer(CascadeAnswer(key: key, kind: kind, target: message.target, at: message.at, by: by))
        case .claim(let slot):
            let message: ClaimMessage = try decode(payload)
            let by = try member(message.by)
            try checkTime(message.at)
            return .claim(slot, SlotClaim(by: by, at: message.at, state: message.state))
        }
    }

    static func member(_ name: String) throws(HouseholdMessageError) -> String {
        do { return try BackupTarget.deviceName(name) } catch { throw HouseholdMessageError("a sender name that is not valid") }
    }

    static func checkTime(_ at: Int64) throws(HouseholdMessageError) {
        guard at >= HouseholdLimits.earliest, at <= HouseholdLimits.latest else { throw HouseholdMessageError("a time between 2000 and 2200") }
    }

    static func decode<T: Decodable>(_ payload: [UInt8]) throws(HouseholdMessageError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(payload))
        } catch {
            throw HouseholdMessageError("a message that is not the expected JSON")
        }
    }

    /// The JSON of a message this agent publishes (sorted keys: the same state gives the same bytes).
    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(value))) ?? []
    }
}
