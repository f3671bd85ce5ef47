import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging

struct ButtonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "button",
        abstract: "BLE buttons: add, map, list, remove, scan, test.",
        subcommands: [Scan.self, Add.self, List.self, Remove.self, Map.self, TestPresses.self]
    )

    static func useCases(_ location: some Locating) -> ButtonUseCases {
        ButtonUseCases(store: DataStore(directory: location.paths.dataDirectory))
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a button: only added buttons can act.",
            discussion: """
                Adding a button again updates it and keeps its mapping. An encrypted BTHome button keeps its stored \
                bindkey unless --bindkey gives a new one or --remove-bindkey removes it. A Flic 2 is paired with: \
                hold it for 7 seconds until it flashes, then run this (its pairing is kept like a bindkey, never shown).
                """)
        @Argument(help: "Its Bluetooth address, AA:BB:CC:DD:EE:FF.") var address: String
        @Option(help: "bthome, itag, hid or flic2.") var kind: ButtonKind
        @Option(help: "Flic 2: how long to wait for the button while pairing, in seconds.") var seconds: Int = 60
        @Option(help: "The BTHome bindkey: 32 hex digits (encrypted buttons).") var bindkey: String?
        @Flag(help: "Remove the stored bindkey of a button added before (it sends plaintext adverts now).") var removeBindkey = false
        @Option(help: "A name for logs and battery alerts.") var name: String?
        @OptionGroup var location: DataOptions

        func validate() throws {
            try validAddress(address)
            if bindkey != nil && removeBindkey { throw ValidationError("--bindkey and --remove-bindkey exclude each other") }
            if let bindkey { _ = try usage { try ButtonConfig.parseBindkey(bindkey).get() } }
            guard (5...600).contains(seconds) else { throw ValidationError("--seconds must be from 5 to 600") }
            if kind == .flic2, bindkey != nil || removeBindkey { throw ValidationError("a Flic 2 has no bindkey: it is paired with") }
        }

        func run() async throws {
            var pairing: String?
            var name = self.name
            if kind == .flic2 {
                let paired = try await pairFlic2()
                pairing = paired.pairing.hex
                if name == nil, let own = String(validating: paired.info.name, as: UTF8.self),
                   (try? ButtonConfig(address: address, kind: .flic2, name: own, pairing: pairing)) != nil, !own.isEmpty {
                    name = own
                }
            }
            let result = try failing { try ButtonCommand.useCases(location).add(
                address: address, kind: kind, name: name, bindkey: bindkey, removeBindkey: removeBindkey, pairing: pairing) }
            let button = result.button
            let shown = DisplayText.escaped(button.name)
            let encrypted = button.bindkey != nil ? ", encrypted" : ""
            if result.updated {
                printLine("Updated \(shown) (\(button.address), \(button.kind.rawValue)\(encrypted)).")
            } else {
                printLine("Added \(shown) (\(button.address), \(button.kind.rawValue)\(encrypted)): single → take, double → snooze, hold → undo.")
            }
            if let note = result.keyChange { printLine(note.description) }
        }

        /// The full verify with the button, with a line at each step; the one-line reason when it fails.
        private func pairFlic2() async throws -> Flic2Pairer.Paired {
            let logger = buttonCommandLogging(.error)
            printLine("Hold the Flic 2 for 7 seconds until it flashes (pairing mode); looking for it at \(address) (up to \(seconds) s)…")
            let paired = try await failing {
                try await Flic2Pairer.pair(address: address, seconds: seconds, logger: logger) { printLine($0) }
            }
            let volts = String(format: "%.2f", Double(paired.info.batteryMillivolts) / 1000)
            printLine("Verified a genuine Flic 2 (serial \(DisplayText.escaped(String(decoding: paired.info.serialNumber, as: UTF8.self))), "
                + "battery \(volts) V, \(Flic2Battery.percent(millivolts: paired.info.batteryMillivolts)) %).")
            return paired
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the added buttons.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws {
            let (buttons, unusable) = try failing { try ButtonCommand.useCases(location).list() }
            if json {
                printLine(JSON.array(buttons.map(\.json) + unusable.map(\.json)).text)
                return
            }
            if buttons.isEmpty && unusable.isEmpty { printLine("No buttons. Add one with: dosetap button add ADDRESS --kind bthome|itag|hid|flic2") }
            for b in buttons {
                printLine("\(DisplayText.escaped(b.name))  \(b.address)  \(b.kind.rawValue)\(b.bindkey != nil ? " (encrypted)" : "")  \(b.mapping.summary)")
            }
            for row in unusable {
                printLine("\(DisplayText.escaped(row.address))  unusable, never acts: \(DisplayText.escaped(row.reason, maxLength: 200)) (add it again)")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a button.")
        @Argument(help: "Its address.") var address: String
        @OptionGroup var location: DataOptions

        func run() throws {
            let spelled = try failing { try ButtonCommand.useCases(location).remove(address: address) }
            printLine("Removed \(spelled).")
        }
    }

    struct Map: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "map", abstract: "Choose what each gesture of a button does (take, snooze, undo, skip, none).")
        @Argument(help: "Its address.") var address: String
        @Option(help: "take, snooze, undo, skip or none.") var single: ButtonAction?
        @Option(help: "take, snooze, undo, skip or none.") var double: ButtonAction?
        @Option(help: "take, snooze, undo, skip or none.") var hold: ButtonAction?
        @Flag(help: "No double press: single presses act at once.") var noDouble = false
        @Flag(help: "Recognise double presses again.") var withDouble = false
        @OptionGroup var location: DataOptions

        func validate() throws {
            try validAddress(address)
        }

        func run() throws {
            let change = ButtonUseCases.MappingChange(single: single, double: double, hold: hold,
                                                      noDouble: withDouble ? false : (noDouble ? true : nil))
            let button = try failing { try ButtonCommand.useCases(location).map(address: address, change) }
            printLine("\(DisplayText.escaped(button.name)): \(button.mapping.summary)")
        }
    }

    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "scan", abstract: "List nearby BLE buttons (BlueZ discovery).")
        @Option(help: "How long to listen.") var seconds: Int = 10
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            guard (1...300).contains(seconds) else { throw ValidationError("--seconds must be from 1 to 300") }
        }

        func run() async throws {
            let sorted = try await failing { try await ButtonUseCases.scan(seconds: seconds, with: BlueZButtonScanner()) }
            if json {
                printLine(JSON.array(sorted.map(\.json)).text)
                return
            }
            if sorted.isEmpty { printLine("No buttons found in \(seconds) s.") }
            for c in sorted {
                let signal = c.rssi.map { "\($0) dBm" } ?? (c.connected ? "connected" : "")
                // A BLE name is whatever the device advertises: escaped and cut here, exact in --json.
                printLine("\(c.kind.rawValue)  \(c.address)  \(DisplayText.escaped(c.name, placeholder: "(no name)"))  \(signal)")
            }
        }
    }

    struct TestPresses: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "test",
            abstract: "Show each gesture of the added buttons and the action it would trigger, without acting.")
        @Option(help: "How long to listen.") var seconds: Int = 30
        @OptionGroup var location: DataOptions

        func validate() throws {
            guard (1...3600).contains(seconds) else { throw ValidationError("--seconds must be from 1 to 3600") }
        }

        func run() async throws {
            let logger = buttonCommandLogging(.warning)
            let service = try failing {
                try ButtonService.observing(ButtonCommand.useCases(location), logger: logger) { intent in
                    printLine("\(DisplayText.escaped(intent.button.name)): \(intent.gesture.rawValue) → \(intent.action.rawValue) (not acted on)")
                }
            }
            printLine("Press a button (\(seconds) s)…")
            let task = Task { try await service.run() }
            try? await Task.sleep(for: .seconds(seconds))
            task.cancel()
            _ = try? await task.value
        }
    }
}

/// Logging for a button command that talks to BlueZ: to stderr from `level` up, escaped (the pipeline and the GATT
/// client log device names: no raw control character reaches the terminal).
func buttonCommandLogging(_ level: Logger.Level) -> Logger {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return EscapingLogHandler(handler)
    }
    var logger = Logger(label: "dosetap.cli")
    logger.logLevel = level
    return logger
}

extension ButtonKind: ExpressibleByArgument {}
extension ButtonAction: ExpressibleByArgument {}

/// A button's address on the command line: malformed is a usage error (exit 64), in the parser's words.
func validAddress(_ text: String) throws {
    do { _ = try BluetoothAddress(parsing: text) } catch {
        throw ValidationError("invalid address '\(oneLine(text))': \(error)")
    }
}
