import DoseTapCore
import Foundation

extension UserSettings {
    /// The night's settings: `{"configured","bedtime","wakeTime","dose1Grams",…}`.
    public var json: JSON {
        .object([
            ("configured", .bool(configured)),
            ("bedtime", .string(bedtime)),
            ("wakeTime", .string(wakeTime)),
            ("dose1Grams", .number(dose1Grams)),
            ("dose2Grams", .number(dose2Grams)),
            ("dose2TargetMinutes", .int(dose2TargetMinutes)),
            ("notifications", .bool(notificationsEnabled)),
            ("quietMode", .bool(quietMode)),
        ])
    }
}

extension EventFeedback {
    /// One event's overrides: "default" where the global value applies.
    public var json: JSON {
        .object([
            ("chime", .bool(chime)),
            ("sound", .string(sound ?? "default")),
            ("haptics", .string(haptics.map { $0 ? "on" : "off" } ?? "default")),
            ("intensity", .string(intensity?.rawValue ?? "default")),
        ])
    }
}

extension SettingsUseCases.Feedback {
    /// `{"global":{…},"events":{name:{…}}}`, every event in order.
    public var json: JSON {
        let events: [(String, JSON)] = FeedbackEvent.allCases.map { ($0.rawValue, settings.event($0).json) }
        return .object([
            ("global", .object([
                ("sound", JSON.optional(globalSound)),
                ("haptics", .bool(settings.global.hapticsEnabled)),
                ("intensity", .string(settings.global.intensity.rawValue)),
                ("quiet", .bool(quietMode)),
                ("hapticsSupported", .bool(hapticsSupported)),
            ])),
            ("events", .object(events)),
        ])
    }
}

extension FeedbackPlan {
    /// What would play for its event: chime, sound, haptics, muted, warnings.
    public var json: JSON {
        .object([
            ("event", .string(event.rawValue)),
            ("chime", .bool(chime)),
            ("sound", JSON.optional(sound?.name)),
            ("haptics", haptics.map { .object([("intensity", .string($0.intensity.rawValue))]) } ?? .null),
            ("muted", .bool(muted)),
            ("warnings", .array(warnings.map { .string($0) })),
        ])
    }
}

extension SoundInfo {
    /// `{"name","theme","path"}`.
    public var json: JSON {
        .object([("name", .string(name)), ("theme", .string(theme)), ("path", .string(path))])
    }
}
