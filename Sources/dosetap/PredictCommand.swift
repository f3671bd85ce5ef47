import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import Foundation

struct PredictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "predict",
        abstract: "Predict whether a battery lasts until the alarm.",
        discussion: "predicted = level − drain × hours, clamped at 0 and rounded down: > 20% safe, 6–20% warning, ≤ 5% critical. Charging is always safe."
    )

    @Option(parsing: .unconditional, help: "Battery level now, in percent (0–100).")
    var level: PlainNumber

    @Option(parsing: .unconditional, help: "Drain in percent per hour (≥ 0).")
    var drain: PlainNumber

    @Option(parsing: .unconditional, help: "Hours until the alarm (≥ 0).")
    var hours: PlainNumber

    @Flag(help: "The machine is plugged in.")
    var charging = false

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let input = RiskInput(level: level.value, drainPercentPerHour: drain.value, hours: hours.value, charging: charging)
        let (prediction, nudge) = try failing { try BatteryUseCases.predict(input) }
        if json {
            printLine(prediction.json.text)
            return
        }
        printLine("\(prediction.risk.rawValue): estimated battery at alarm \(prediction.predictedLevel)%")
        if let nudge {
            printNudge(nudge)
        }
    }
}

func printNudge(_ nudge: Nudge) {
    printLine(Terminal.colored(nudge.header, nudge.color.rawValue))
    printLine(nudge.headline)
    printLine(Terminal.colored(nudge.action, nudge.color.rawValue))
    if let powerOff = nudge.powerOff { printLine(powerOff) }
    if let assumption = nudge.assumption { printLine("Assuming: \(assumption)") }
    if let deadline = nudge.deadlineText { printLine(deadline) }
}
