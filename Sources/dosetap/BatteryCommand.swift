import ArgumentParser
import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation

struct BatteryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "battery",
        abstract: "Show the system battery, its drain, and whether it lasts until an alarm."
    )

    @Option(help: "Predict the battery at the next occurrence of this local time (HH:MM).")
    var alarm: String?

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var location: LocationOptions

    func validate() throws {
        if let alarm {
            do { _ = try TimeOfDay(parsing: alarm) } catch { throw ValidationError(error.description) }
        }
    }

    func run() throws {
        let now = Date()
        let alarmTime: TimeOfDay?
        do { alarmTime = try alarm.map { try TimeOfDay(parsing: $0) } } catch { throw CLIError("\(error)") }
        let status: BatteryStatus
        do {
            let source = try UdevPowerSupplySource()
            let history = try DoseTapDatabase.openForReading(directory: location.paths.dataDirectory)
                .map { BatterySampleRepository(database: $0) }
            status = try BatteryStatus.read(source: source, history: history, now: now)
        } catch {
            throw CLIError("\(error)")
        }
        if let alarmTime {
            let at = alarmTime.nextOccurrence(after: now, in: SystemTimeZone.current)
            let forecast = BatteryForecast.make(state: status.state, drain: status.drain, at: at, now: now)
            json ? printLine(forecastJSON(forecast, status: status).text) : printForecast(forecast, status: status)
        } else {
            json ? printLine(statusJSON(status).text) : printStatus(status)
        }
    }

    func statusJSON(_ status: BatteryStatus) -> JSON {
        let state = status.state
        var system: [(String, JSON)] = [
            ("present", .bool(state.present)),
            ("level", JSON.optional(state.level.map { Int($0.rounded()) })),
            ("status", .string(state.status.rawValue)),
            ("onAC", .bool(state.onAC)),
            ("drainPercentPerHour", .optional(status.drain.percentPerHour)),
            ("drainSource", .string(status.drain.source.rawValue)),
            ("hoursToEmpty", .optional(status.hoursToEmpty)),
        ]
        if let rate = state.rateW { system.append(("rateW", .number(rate.rounded(places: 3)))) }
        let supplies: [JSON] = state.supplies.map { s in
            var fields: [(String, JSON)] = [
                ("name", .string(s.name)),
                ("type", .string(s.type.name)),
                ("scope", .string(s.scope.rawValue)),
                ("present", .bool(s.present)),
                ("status", .string(s.status.rawValue)),
                ("online", s.online.map { .bool($0) } ?? .null),
                ("level", JSON.optional(s.level.map { Int($0.rounded()) })),
            ]
            let optional: [(String, Double?)] = [
                ("energyWh", s.energyWh), ("energyFullWh", s.energyFullWh),
                ("energyFullDesignWh", s.energyFullDesignWh), ("rateW", s.rateW), ("voltageV", s.voltageV),
            ]
            for (key, value) in optional {
                if let value { fields.append((key, .number(value.rounded(places: 3)))) }
            }
            if let model = s.model { fields.append(("model", .string(model))) }
            if !s.problems.isEmpty { fields.append(("problems", .array(s.problems.map { .string($0) }))) }
            return .object(fields)
        }
        return .object([("system", .object(system)), ("supplies", .array(supplies))])
    }

    func forecastJSON(_ f: BatteryForecast, status: BatteryStatus) -> JSON {
        .object([
            ("alarmAt", .string(f.at.rfc3339())),
            ("hoursUntil", .number(f.hoursUntil.rounded(places: 2))),
            ("level", JSON.optional(f.level.map { Int($0.rounded()) })),
            ("drainPercentPerHour", .optional(f.drain.percentPerHour)),
            ("drainSource", .string(f.drain.source.rawValue)),
            ("charging", .bool(f.charging)),
            ("risk", .string(f.risk?.rawValue ?? "unknown")),
            ("predictedLevel", JSON.optional(f.predictedLevel)),
            ("nudge", f.nudge?.json ?? .null),
            ("reason", JSON.optional(f.reason)),
        ])
    }

    func printStatus(_ status: BatteryStatus) {
        let state = status.state
        if state.present {
            let level = state.level.map { "\(Int($0.rounded()))%" } ?? "level unknown"
            printLine("System battery: \(level), \(state.status.rawValue), \(state.onAC ? "on AC" : "on battery")")
            if let drain = status.drain.percentPerHour {
                var line = "Drain: \(drain.rounded(places: 1)) %/h (\(status.drain.source.rawValue))"
                if let hours = status.hoursToEmpty { line += ", about \(hours.rounded(places: 1)) h to empty" }
                printLine(line)
            } else if !state.onAC {
                printLine("Drain: not known yet (no hardware rate and not enough history)")
            }
        } else {
            printLine("No system battery: this machine runs on external power.")
        }
        for s in state.supplies {
            // Names and types are sysfs text: shown escaped and cut (JSON keeps them exact).
            var parts = ["  \(DisplayText.escaped(s.name))", DisplayText.escaped(s.type.name)]
            if s.scope == .device { parts.append("(device)") }
            if !s.present { parts.append("absent") }
            if let online = s.online { parts.append(online ? "online" : "offline") }
            if let level = s.level { parts.append("\(Int(level.rounded()))%") }
            if s.type == .battery { parts.append(s.status.rawValue) }
            if let e = s.energyWh, let f = s.energyFullWh { parts.append("\(e.rounded(places: 1))/\(f.rounded(places: 1)) Wh") }
            if let r = s.rateW { parts.append("\(r.rounded(places: 2)) W") }
            printLine(parts.joined(separator: "  "))
        }
    }

    func printForecast(_ f: BatteryForecast, status: BatteryStatus) {
        printLine("Alarm: \(f.at.localClock()) (in \(f.hoursUntil.rounded(places: 1)) h)")
        if let level = f.level {
            var line = "Battery now: \(Int(level.rounded()))%"
            if f.charging { line += ", charging" }
            if let drain = f.drain.percentPerHour { line += ", drain \(drain.rounded(places: 1)) %/h (\(f.drain.source.rawValue))" }
            printLine(line)
        }
        if let risk = f.risk, let predicted = f.predictedLevel {
            printLine("\(risk.rawValue): estimated battery at alarm \(predicted)%")
        } else {
            printLine("\(f.risk?.rawValue ?? "unknown")" + (f.reason.map { ": \(DisplayText.escaped($0, maxLength: 200))" } ?? ""))
        }
        if let nudge = f.nudge { printNudge(nudge) }
    }
}
