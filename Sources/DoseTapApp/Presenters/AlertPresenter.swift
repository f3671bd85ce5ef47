import DoseTapCore
import Foundation

extension AlertOverview {
    /// `{"warning", "critical", "snoozedUntil", "sources": [{"name", "kind", "usage", "remaining", "warning",
    /// "critical", "enabled", "state"}]}`; usage and remaining in percent (null when never read).
    public func json(now: Date, in timeZone: TimeZone) -> JSON {
        .object([
            ("warning", .int(settings.thresholds.warning)),
            ("critical", .int(settings.thresholds.critical)),
            ("snoozedUntil", settings.isSnoozed(at: now) ? settings.snoozedUntil.map { .string($0.rfc3339(in: timeZone)) } ?? .null : .null),
            ("sources", .array(sources.map { source in
                .object([
                    ("name", .string(source.name)),
                    ("kind", .string(source.kind.rawValue)),
                    ("usage", .optional(source.usage, places: 1)),
                    ("remaining", .optional(source.usage.map { 100 - $0 }, places: 1)),
                    ("warning", .int(source.thresholds.warning)),
                    ("critical", .int(source.thresholds.critical)),
                    ("enabled", .bool(source.enabled)),
                    ("state", .string(source.state)),
                ])
            })),
        ])
    }

    /// The text screen: the global line, then a line per source. Names from devices are shown escaped.
    public func lines(now: Date, in timeZone: TimeZone) -> [String] {
        var head = "Alerts at \(settings.thresholds.warning) % used (warning) and \(settings.thresholds.critical) % used (critical)"
        if settings.isSnoozed(at: now), let until = settings.snoozedUntil {
            head += "; snoozed until \(until.clock(in: timeZone))"
        }
        var out = [head]
        if sources.isEmpty { out.append("No batteries found (the system battery, peripherals, UPS, buttons).") }
        for source in sources {
            let usage = source.usage.map { String(format: "%.0f %% used (%.0f %% left)", $0, 100 - $0) } ?? "not read"
            var line = "\(DisplayText.escaped(source.name))  \(source.kind.rawValue)  \(usage)  \(source.state)"
            if source.thresholds != settings.thresholds {
                line += "  (its own: \(source.thresholds.warning) / \(source.thresholds.critical) %)"
            }
            out.append(line)
        }
        return out
    }
}

extension AlertRecord {
    /// `{"at", "source", "usage", "level"}`.
    public func json(in timeZone: TimeZone) -> JSON {
        .object([("at", .string(at.rfc3339(in: timeZone))), ("source", .string(source)),
                 ("usage", .number(usage.rounded(places: 1))), ("level", .string(level.rawValue))])
    }

    /// `2026-11-24 06:30  BAT0  86 % used  warning`.
    public func line(in timeZone: TimeZone) -> String {
        "\(at.clock(in: timeZone))  \(DisplayText.escaped(source))  \(String(format: "%.0f", usage)) % used  \(level.rawValue)"
    }
}

extension Date {
    /// `2026-11-24 06:30` in the zone (the alert history in the CLI and on the dashboard).
    public func clock(in timeZone: TimeZone) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = timeZone
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f.string(from: self)
    }
}
