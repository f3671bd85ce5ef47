import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
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

    @OptionGroup var location: DataOptions

    func validate() throws {
        if let alarm {
            do { _ = try TimeOfDay(parsing: alarm) } catch { throw ValidationError(error.description) }
        }
    }

    func run() throws {
        let alarmTime: TimeOfDay?
        do { alarmTime = try alarm.map { try TimeOfDay(parsing: $0) } } catch { throw ValidationError("\(error)") }
        let battery = MachinePorts.batteries(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock())
        if let alarmTime {
            let (forecast, status) = try failing { try battery.forecast(alarm: alarmTime) }
            json ? printLine(forecast.json(in: SystemTimeZone.current).text) : printForecast(forecast, status: status)
        } else {
            let status = try failing { try battery.status() }
            let guardian = sleepGuard()
            if json {
                var shown = status.json
                if case .object(var fields) = shown {
                    fields.append(("sleepGuard", guardian.json))
                    shown = .object(fields)
                }
                printLine(shown.text)
            } else {
                printStatus(status)
                if status.state.present { printLine("Sleep guard: \(guardian.text)") }
            }
        }
    }

    /// `[battery] guard` and the wake-up finding (the agent's, else this process's own check): what the guard does at an
    /// alarm's deadline on this machine (#52 §3). A configuration that cannot be read says so.
    func sleepGuard() -> (text: String, json: JSON) {
        let mode: SleepGuardMode
        do {
            mode = try AgentConfiguration.load(from: location.paths.configFile).sleepGuard
        } catch {
            let why = "the configuration cannot be read: \(DisplayText.escaped("\(error)", maxLength: 300))"
            return ("unknown, \(why)", .object([("mode", .null), ("suspends", .null), ("why", .string(why))]))
        }
        let summary = DeadlineGuard.summary(mode: mode, cannotWake: WakeCheck.problem(dataDirectory: location.paths.dataDirectory)?.reason)
        return (summary.text, .object([("mode", .string(mode.rawValue)), ("suspends", .bool(summary.suspends)), ("why", .string(summary.text))]))
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
            if let night = status.night {
                let sleep = night.learning.sleepDrain.estimate
                printLine(sleep.learned
                    ? "Asleep: \(sleep.percentPerHour.rounded(places: 2)) %/h + \(sleep.fixed.rounded(places: 1)) points a sleep (learned from \(sleep.observations) suspends)"
                    : "Asleep: \(sleep.percentPerHour.rounded(places: 1)) %/h assumed until 3 suspends are seen (\(sleep.observations) so far)")
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
            if let assumption = f.assumption, f.nudge == nil {
                printLine("Assuming: \(assumption.text(in: SystemTimeZone.current))")
            }
        } else {
            printLine("\(f.risk?.rawValue ?? "unknown")" + (f.reason.map { ": \(DisplayText.escaped($0, maxLength: 200))" } ?? ""))
        }
        if let nudge = f.nudge { printNudge(nudge) }
    }
}
