import ArgumentParser
import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging

struct ButtonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "button",
        abstract: "BLE buttons: add, map, list, remove, scan, test.",
        subcommands: [Scan.self, Add.self, List.self, Remove.self, Map.self, TestPresses.self]
    )

    static func repository(_ location: LocationOptions) throws -> ButtonRepository {
        do { return ButtonRepository(database: try DoseTapDatabase(directory: location.paths.dataDirectory)) } catch {
            throw CLIError("\(error)")
        }
    }

    static func json(_ b: ButtonConfig) -> JSON {
        .object([
            ("address", .string(b.address)), ("kind", .string(b.kind.rawValue)), ("name", .string(b.name)),
            ("encrypted", .bool(b.bindkey != nil)),
            ("mapping", .object([
                ("single", .string(b.mapping.single.rawValue)), ("double", .string(b.mapping.double.rawValue)),
                ("hold", .string(b.mapping.hold.rawValue)), ("noDouble", .bool(b.mapping.noDouble)),
            ])),
        ])
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a button: only added buttons can act.",
            discussion: """
                Adding a button again updates it and keeps its mapping. An encrypted BTHome button keeps its stored \
                bindkey unless --bindkey gives a new one or --remove-bindkey removes it.
                """)
        @Argument(help: "Its Bluetooth address, AA:BB:CC:DD:EE:FF.") var address: String
        @Option(help: "bthome, itag or hid.") var kind: ButtonKind
        @Option(help: "The BTHome bindkey: 32 hex digits (encrypted buttons).") var bindkey: String?
        @Flag(help: "Remove the stored bindkey of a button added before (it sends plaintext adverts now).") var removeBindkey = false
        @Option(help: "A name for logs and battery alerts.") var name: String?
        @OptionGroup var location: LocationOptions

        func validate() throws {
            if bindkey != nil && removeBindkey { throw ValidationError("--bindkey and --remove-bindkey exclude each other") }
        }

        func run() throws {
            do { _ = try ButtonConfig(address: address, kind: kind, name: name, bindkey: bindkey) } catch {
                throw CLIError(error.description)
            }
            let repo = try ButtonCommand.repository(location)
            let existing = (try? repo.find(address: address)) ?? nil
            // A key is never dropped by leaving --bindkey out: the stored one stays unless the user says otherwise.
            var key = bindkey
            var note: String?
            if let stored = existing?.bindkey {
                if removeBindkey {
                    note = "Removed its bindkey: plaintext adverts from it act now."
                } else if bindkey == nil {
                    if kind == .bthome {
                        key = stored
                        note = "Kept its bindkey (--bindkey KEY replaces it, --remove-bindkey removes it)."
                    } else {
                        note = "Its bindkey was dropped: only BTHome buttons have one."
                    }
                } else if bindkey?.lowercased() != stored {
                    note = "Replaced its bindkey."
                }
            }
            let button: ButtonConfig
            do { button = try ButtonConfig(address: address, kind: kind, name: name, bindkey: key) } catch {
                throw CLIError(error.description)
            }
            let shown = DisplayText.escaped(button.name)
            if let existing {
                var updated = button
                updated.mapping = existing.mapping
                try saveOrFail(repo, updated)
                printLine("Updated \(shown) (\(updated.address), \(updated.kind.rawValue)\(updated.bindkey != nil ? ", encrypted" : "")).")
            } else {
                try saveOrFail(repo, button)
                printLine("Added \(shown) (\(button.address), \(button.kind.rawValue)\(button.bindkey != nil ? ", encrypted" : "")): single → take, double → snooze, hold → undo.")
            }
            if let note { printLine(note) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the added buttons.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let buttons: [ButtonConfig]
            let unusable: [UnusableButton]
            do { (buttons, unusable) = try ButtonCommand.repository(location).load() } catch { throw CLIError("\(error)") }
            if json {
                printLine(JSON.array(buttons.map(ButtonCommand.json) + unusable.map { row in
                    .object([("address", .string(row.address)), ("unusable", .string(row.reason))])
                }).text)
                return
            }
            if buttons.isEmpty && unusable.isEmpty { printLine("No buttons. Add one with: dosetap button add ADDRESS --kind bthome|itag|hid") }
            for b in buttons {
                printLine("\(DisplayText.escaped(b.name))  \(b.address)  \(b.kind.rawValue)\(b.bindkey != nil ? " (encrypted)" : "")  single → \(b.mapping.single.rawValue), double → \(b.mapping.noDouble ? "off" : b.mapping.double.rawValue), hold → \(b.mapping.hold.rawValue)")
            }
            for row in unusable {
                printLine("\(DisplayText.escaped(row.address))  unusable, never acts: \(DisplayText.escaped(row.reason, maxLength: 200)) (add it again)")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a button.")
        @Argument(help: "Its address.") var address: String
        @OptionGroup var location: LocationOptions

        func run() throws {
            // A well-formed address an older version accepted (now refused) can still be removed.
            guard let spelled = BluetoothAddress.canonicalSpelling(address) else {
                throw CLIError("invalid address '\(DisplayText.escaped(address, maxLength: 40))': \(BluetoothAddress.Invalid.syntax)")
            }
            let removed: Bool
            do { removed = try ButtonCommand.repository(location).remove(address: address) } catch { throw CLIError("\(error)") }
            guard removed else { throw CLIError("no button \(spelled)") }
            printLine("Removed \(spelled).")
        }
    }

    struct Map: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Choose what each gesture of a button does (take, snooze, undo, skip, none).")
        @Argument(help: "Its address.") var address: String
        @Option(help: "take, snooze, undo, skip or none.") var single: ButtonAction?
        @Option(help: "take, snooze, undo, skip or none.") var double: ButtonAction?
        @Option(help: "take, snooze, undo, skip or none.") var hold: ButtonAction?
        @Flag(help: "No double press: single presses act at once.") var noDouble = false
        @Flag(help: "Recognise double presses again.") var withDouble = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let repo = try ButtonCommand.repository(location)
            let canonical: String
            do { canonical = try BluetoothAddress(parsing: address).description } catch {
                throw CLIError("invalid address '\(DisplayText.escaped(address, maxLength: 40))': \(error)")
            }
            guard var button = try? repo.find(address: address) else { throw CLIError("no button \(canonical)") }
            if let single { button.mapping.single = single }
            if let double { button.mapping.double = double }
            if let hold { button.mapping.hold = hold }
            if noDouble { button.mapping.noDouble = true }
            if withDouble { button.mapping.noDouble = false }
            try saveOrFail(repo, button)
            printLine("\(DisplayText.escaped(button.name)): single → \(button.mapping.single.rawValue), double → \(button.mapping.noDouble ? "off" : button.mapping.double.rawValue), hold → \(button.mapping.hold.rawValue)")
        }
    }

    struct Candidate {
        var kind: ButtonKind
        var address: String
        var name: String?
        var rssi: Int?
        var connected: Bool
    }

    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List nearby BLE buttons (BlueZ discovery).")
        @Option(help: "How long to listen.") var seconds: Int = 10
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            guard (1...300).contains(seconds) else { throw ValidationError("--seconds must be from 1 to 300") }
        }

        func run() async throws {
            let client: BlueZClient
            do { client = BlueZClient(connection: try DBusConnection(bus: .system)) } catch {
                throw CLIError("cannot reach BlueZ on the system bus: \(error)")
            }
            var seen: [String: BLEAdvert] = [:]
            do {
                try await client.startDiscovery()
                let adverts = try await client.adverts()
                let deadline = Date().addingTimeInterval(TimeInterval(seconds))
                let collector = Task {
                    var found: [String: BLEAdvert] = [:]
                    for await a in adverts {
                        var merged = found[a.address] ?? a
                        merged.rssi = a.rssi ?? merged.rssi
                        merged.name = a.name ?? merged.name
                        merged.serviceData.merge(a.serviceData) { $1 }
                        merged.uuids = Array(Set(merged.uuids + a.uuids))
                        found[a.address] = merged
                        if Date() > deadline { break }
                    }
                    return found
                }
                try await Task.sleep(for: .seconds(seconds))
                collector.cancel()
                seen = await collector.value
                await client.stopDiscovery()
            } catch {
                throw CLIError("scan failed: \(error)")
            }
            var candidates = seen.values.compactMap { a -> Candidate? in
                let kind: ButtonKind
                if a.serviceData[BLEAdvert.bthomeUUID] != nil { kind = .bthome }
                else if a.uuids.contains(where: { $0.lowercased().hasPrefix("0000ffe0") }) { kind = .itag }
                else if a.uuids.contains(where: { $0.lowercased().hasPrefix("00001812") }) { kind = .hid }
                else { return nil }
                return Candidate(kind: kind, address: a.address, name: a.name, rssi: a.rssi, connected: false)
            }
            // HID remotes already connected: they stop advertising, but the kernel has their input nodes.
            for remote in (try? HIDButtonSource())?.remotes() ?? [] {
                if let i = candidates.firstIndex(where: { $0.address == remote.address }) {
                    candidates[i].kind = .hid
                    candidates[i].connected = true
                } else if !candidates.contains(where: { $0.address == remote.address }) {
                    candidates.append(Candidate(kind: .hid, address: remote.address, name: remote.name, rssi: nil, connected: true))
                }
            }
            // One line per remote (a shutter has two input nodes); strongest first, connected ones last.
            var unique: [String: Candidate] = [:]
            for c in candidates where unique[c.address] == nil { unique[c.address] = c }
            let sorted = unique.values.sorted { ($0.rssi ?? -999, $1.address) > ($1.rssi ?? -999, $0.address) }
            if json {
                printLine(JSON.array(sorted.map { c in
                    .object([("kind", .string(c.kind.rawValue)), ("address", .string(c.address)), ("name", JSON.optional(c.name)),
                             ("rssi", JSON.optional(c.rssi)), ("connected", .bool(c.connected))])
                }).text)
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
        @OptionGroup var location: LocationOptions

        func validate() throws {
            guard (1...3600).contains(seconds) else { throw ValidationError("--seconds must be from 1 to 3600") }
        }

        func run() async throws {
            let repository = try ButtonCommand.repository(location)
            let buttons = try repository.all()
            guard !buttons.isEmpty else { throw CLIError("no buttons added: dosetap button add ADDRESS --kind …") }
            // The pipeline logs device names: no raw control character reaches the terminal.
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = .warning
                return EscapingLogHandler(handler)
            }
            var logger = Logger(label: "dosetap.cli")
            logger.logLevel = .warning
            // BLE buttons through BlueZ; HID remotes through evdev (grabbed while testing, as the agent does).
            var bluez: BlueZClient?
            if buttons.contains(where: { $0.kind != .hid }) {
                do { bluez = BlueZClient(connection: try DBusConnection(bus: .system), logger: logger) } catch {
                    throw CLIError("cannot reach BlueZ on the system bus: \(error)")
                }
            }
            let hid = buttons.contains(where: { $0.kind == .hid }) ? try? HIDButtonSource(logger: logger) : nil
            // The agent's own pipeline (allowlist, BTHome rules, gesture recognition), observing instead of acting.
            let service = ButtonService(
                bluez: bluez, hid: hid, buttons: repository, doses: nil, samples: nil,
                clock: TimerFDScheduler.shared, logger: logger, databaseChanges: nil,
                observer: { intent in
                    printLine("\(DisplayText.escaped(intent.button.name)): \(intent.gesture.rawValue) → \(intent.action.rawValue) (not acted on)")
                })
            printLine("Press a button (\(seconds) s)…")
            let task = Task { try await service.run() }
            try? await Task.sleep(for: .seconds(seconds))
            task.cancel()
            _ = try? await task.value
        }
    }
}

extension ButtonKind: ExpressibleByArgument {}
extension ButtonAction: ExpressibleByArgument {}

func saveOrFail(_ repo: ButtonRepository, _ button: ButtonConfig) throws {
    do { try repo.save(button) } catch { throw CLIError("could not save: \(error)") }
}
