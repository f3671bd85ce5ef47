import Foundation

/// What the store keeps of the machine's nights, read back from the JSON the agent writes with `JSONEncoder` (the
/// `Codable` conformances' own keys; a `Date` as seconds since 2001-01-01, Foundation's default), without
/// `JSONDecoder`: the one-shot commands read it on every `alarm list --json` and status bar refresh (#29; why, in
/// `JSONValue`). Both the store and the one-shot front read it through here, so they cannot differ.
///
/// The rules are the synthesized decoder's: every key of a non-optional property must be there with a value of its
/// type (a whole number for an `Int`); an optional one may be missing or null; other keys are ignored. Anything
/// else is nil — the store then counts nothing as learned yet (`NightLearningRepository`), as before.
/// `NightLearningJSONTests` hold it equal to `JSONDecoder` on what `JSONEncoder` writes and on damaged copies.
extension NightLearning {
    public init?(json: JSONValue) {
        guard case .object = json, let drain = json["sleepDrain"].flatMap(SleepDrainModel.init(json:)),
              let habits = json["habits"].flatMap(SleepHabits.init(json:)) else { return nil }
        var conditions: NightConditions?
        if let value = json["conditions"], !value.isNull {
            guard let read = NightConditions(json: value) else { return nil }
            conditions = read
        }
        self.init(sleepDrain: drain, habits: habits, conditions: conditions)
    }

    /// The learning stored as `text`, or nil when it cannot be read.
    public init?(storedText text: String) {
        guard let json = JSONValue.parse(text) else { return nil }
        self.init(json: json)
    }
}

extension SleepDrainModel {
    init?(json: JSONValue) {
        guard case .object = json, let items = json["observations"]?.array else { return nil }
        var read: [SleepDrainObservation] = []
        read.reserveCapacity(items.count)
        for item in items {
            guard case .object = item, let at = item["at"]?.number, let hours = item["hours"]?.number,
                  let rate = item["percentPerHour"]?.number else { return nil }
            read.append(SleepDrainObservation(at: Date(timeIntervalSinceReferenceDate: at), hours: hours, percentPerHour: rate))
        }
        self.init()
        // As the synthesized decoder does: the stored list as it is (no trimming to `kept`).
        observations = read
    }
}

extension SleepHabits {
    init?(json: JSONValue) {
        guard case .object = json, let items = json["nights"]?.array else { return nil }
        var read: [NightRecord] = []
        read.reserveCapacity(items.count)
        for item in items {
            guard case .object = item, let night = item["night"]?.string, let from = item["awakeFrom"]?.integer,
                  let until = item["awakeUntil"]?.integer else { return nil }
            var onset: Int?
            if let value = item["onset"], !value.isNull {
                guard let minute = value.integer else { return nil }
                onset = minute
            }
            read.append(NightRecord(night: night, awakeFrom: from, awakeUntil: until, onset: onset))
        }
        self.init()
        // As stored: the synthesized decoder neither sorts nor trims.
        nights = read
    }
}

extension NightConditions {
    init?(json: JSONValue) {
        guard case .object = json, let canWake = json["canWake"]?.bool, let blockers = json["sleepBlockedBy"]?.array,
              let goingToSleep = json["goingToSleep"]?.bool else { return nil }
        var names: [String] = []
        for blocker in blockers {
            guard let name = blocker.string else { return nil }
            names.append(name)
        }
        /// An optional member: missing or null is nil; another type is no value at all (`.failure`).
        func optional<T>(_ key: String, _ read: (JSONValue) -> T?) -> T?? {
            guard let value = json[key], !value.isNull else { return .some(nil) }
            return read(value).map { .some($0) }
        }
        guard let lid = optional("lidSwitch", \.string), let idle = optional("idleAction", \.string),
              let idleSeconds = optional("idleActionSeconds", \.number) else { return nil }
        self.init(canWake: canWake, sleepBlockedBy: names, lidSwitch: lid, idleAction: idle, idleActionSeconds: idleSeconds,
                  goingToSleep: goingToSleep)
    }
}
