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
        static let configuration = CommandConfiguration(abstract: "Add a button: only added buttons can act.")
        @Argument(help: "Its Bluetooth address, AA:BB:CC:DD:EE:FF.") var address: String
        @Option(help: "bthome, itag or hid.") var kind: ButtonKind
        @Option(help: "The BTHome bindkey: 32 hex digits (encrypted buttons).") var bindkey: String?
        @Option(help: "A name for logs and battery alerts.") var name: String?
        @OptionGroup var location: LocationOptions

        func run() throws {
            let button: ButtonConfig
            do { button = try ButtonConfig(address: address, kind: kind, name: name, bindkey: bindkey) } catch {
                throw CLIError(error.description)
            }
            let repo = try ButtonCommand.repository(location)
            if let existing = try? repo.find(address: button.address) {
                var updated = button
                updated.mapping = existing.mapping
                try saveOrFail(repo, updated)
                printLine("Updated \(updated.name) (\(updated.address), \(updated.kind.rawValue)).")
            } else {
                try saveOrFail(repo, button)
                printLine("Added \(button.name) (\(button.address), \(button.kind.rawValue)): single → take, double → snooze, hold → undo.")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the added buttons.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let buttons: [ButtonConfig]
            do { buttons = try ButtonCommand.repository(location).all() } catch { throw CLIError("\(error)") }
            if json {
                printLine(JSON.array(buttons.map(ButtonCommand.json)).text)
                return
            }
            if buttons.isEmpty { printLine("No buttons. Add one with: dosetap button add ADDRESS --kind bthome|itag|hid") }
            for b in buttons {
                printLine("\(b.name)  \(b.address)  \(b.kind.rawValue)\(b.bindkey != nil ? " (encrypted)" : "")  single → \(b.mapping.single.rawValue), double → \(b.mapping.noDouble ? "off" : b.mapping.double.rawValue), hold → \(b.mapping.hold.rawValue)")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a button.")
        @Argument(help: "Its address.") var address: String
        @OptionGroup var location: LocationOptions

        func run() throws {
            guard ButtonConfig.normalize(address: address) != nil else {
                throw CLIError("invalid address '\(address)': expected six hex pairs like AA:BB:CC:DD:EE:FF")
            }
            let removed: Bool
            do { removed = try ButtonCommand.repository(location).remove(address: address) } catch { throw CLIError("\(error)") }
            guard removed else { throw CLIError("no button \(address.uppercased())") }
            printLine("Removed \(address.uppercased()).")
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
            guard ButtonConfig.normalize(address: address) != nil else {
                throw CLIError("invalid address '\(address)': expected six hex pairs like AA:BB:CC:DD:EE:FF")
            }
            guard var button = try? repo.find(address: address) else { throw CLIError("no button \(address.uppercased())") }
            if let single { button.mapping.single = single }
            if let double { button.mapping.double = double }
            if let hold { button.mapping.hold = hold }
            if noDouble { button.mapping.noDouble = true }
            if withDouble { button.mapping.noDouble = false }
            try saveOrFail(repo, button)
            printLine("\(button.name): single → \(button.mapping.single.rawValue), double → \(button.mapping.noDouble ? "off" : button.mapping.double.rawValue), hold → \(button.mapping.hold.rawValue)")
        }
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
            let candidates = seen.values.compactMap { a -> (BLEAdvert, ButtonKind)? in
                if a.serviceData[BLEAdvert.bthomeUUID] != nil { return (a, .bthome) }
                if a.uuids.contains(where: { $0.lowercased().hasPrefix("0000ffe0") }) { return (a, .itag) }
                if a.uuids.contains(where: { $0.lowercased().hasPrefix("00001812") }) { return (a, .hid) }
                return nil
            }.sorted { ($0.0.rssi ?? -999) > ($1.0.rssi ?? -999) }
            if json {
                printLine(JSON.array(candidates.map { a, kind in
                    .object([("kind", .string(kind.rawValue)), ("address", .string(a.address)), ("name", JSON.optional(a.name)),
                             ("rssi", JSON.optional(a.rssi))])
                }).text)
                return
            }
            if candidates.isEmpty { printLine("No buttons found in \(seconds) s.") }
            for (a, kind) in candidates {
                printLine("\(kind.rawValue)  \(a.address)  \(a.name ?? "(no name)")  \(a.rssi.map { "\($0) dBm" } ?? "")")
            }
        }
    }

    struct TestPresses: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "test",
            abstract: "Show each gesture of the added buttons and the action it would trigger, without acting.")
        @Option(help: "How long to listen.") var seconds: Int = 30
        @OptionGroup var location: LocationOptions

        func run() async throws {
            let buttons = try ButtonCommand.repository(location).all()
            guard !buttons.isEmpty else { throw CLIError("no buttons added: dosetap button add ADDRESS --kind …") }
            let client: BlueZClient
            do { client = BlueZClient(connection: try DBusConnection(bus: .system)) } catch {
                throw CLIError("cannot reach BlueZ on the system bus: \(error)")
            }
            let interpreter = ButtonInterpreter(buttons: buttons, logger: Logger(label: "dosetap.cli"))
            printLine("Press a button (\(seconds) s)…")
            do {
                try await client.startDiscovery()
                let adverts = try await client.adverts()
                let listener = Task {
                    for await advert in adverts {
                        for intent in interpreter.interpret(advert).intents {
                            printLine("\(intent.button.name): \(intent.gesture.rawValue) → \(intent.action.rawValue) (not acted on)")
                        }
                    }
                }
                try await Task.sleep(for: .seconds(seconds))
                listener.cancel()
                await client.stopDiscovery()
            } catch {
                throw CLIError("\(error)")
            }
        }
    }
}

extension ButtonKind: ExpressibleByArgument {}
extension ButtonAction: ExpressibleByArgument {}

func saveOrFail(_ repo: ButtonRepository, _ button: ButtonConfig) throws {
    do { try repo.save(button) } catch { throw CLIError("could not save: \(error)") }
}
