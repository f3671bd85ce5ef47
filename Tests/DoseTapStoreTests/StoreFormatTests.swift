import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
import PropertyBased
import Testing

/// DoseTapStoreFormat (#29): what the store and the one-shot front share must be what the store really does.
@Suite("the store's format without GRDB: the schema's versions and the dose log's rows")
struct StoreFormatTests {
    @Test("the schema versions the front checks are exactly the migrations the store registers, in order")
    func migrationList() {
        #expect(Migrations.all.map { $0.identifier } == StoreSchema.migrationIdentifiers)
        #expect(Migrations.migrator.migrations == StoreSchema.migrationIdentifiers)
    }

    @Test("a fresh database records the last version, so a reader that does not migrate sees it as current")
    func freshDatabaseIsCurrent() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-format-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try DoseTapDatabase(directory: dir)
        let queue = try DatabaseQueue(path: dir.appendingPathComponent("dosetap.sqlite").path)
        let recorded = try queue.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(recorded.contains(StoreSchema.migrationIdentifiers.last!))
        #expect(try queue.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
    }

    /// A row of the shared SQL (DoseEventRow.entrySQL) over a dose_event table without column types, so any
    /// storage class can be stored, as the store's reads decode it.
    func decoded(kind: DatabaseValueConvertible? = "dose1", at: DatabaseValueConvertible? = 1_795_332_600.25,
                 payload: DatabaseValueConvertible? = "{\"targetMinutes\":165}", source: DatabaseValueConvertible? = "cli",
                 id: UUID = UUID()) throws -> DoseEvent? {
        let queue = try DatabaseQueue()
        return try queue.write { db in
            try db.execute(sql: "CREATE TABLE dose_event (seq INTEGER PRIMARY KEY, id, kind, at, time_zone, source, payload)")
            try db.execute(sql: "INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (?, ?, ?, ?, ?, ?)",
                           arguments: [id.uuidString, kind, at, "America/New_York", source, payload])
            let row = try #require(try Row.fetchOne(db, sql: DoseEventRow.entrySQL, arguments: [1]))
            #expect(row.count == DoseEventRow.columnCount)
            return DoseRepository.decode(row)
        }
    }

    @Test("a row decodes by its storage classes: text, a time as a real or an integer, a JSON payload")
    func decodeRows() throws {
        let id = UUID()
        let event = try decoded(id: id)
        #expect(event?.id == id)
        #expect(event?.kind == .dose1(targetMinutes: 165))
        #expect(event?.at == Date(timeIntervalSince1970: 1_795_332_600.25))
        #expect(try decoded(at: 1_795_332_600)?.at == Date(timeIntervalSince1970: 1_795_332_600))
        #expect(try decoded(kind: "dose2", payload: "{}")?.kind == .dose2(late: false))
        // Unreadable: a time as text, out of the plausible range or not finite; an unknown kind or source; a payload
        // that is not a JSON object; a column of another class.
        #expect(try decoded(at: "1795332600") == nil)
        #expect(try decoded(at: 946_684_799) == nil)
        #expect(try decoded(at: 7_258_118_401) == nil)
        #expect(try decoded(at: Double.infinity) == nil)
        #expect(try decoded(kind: "dose3") == nil)
        #expect(try decoded(source: "radio") == nil)
        #expect(try decoded(kind: nil) == nil)
        #expect(try decoded(kind: "undo", payload: "{}") == nil)
        #expect(DoseEventRow.decode([.text(id.uuidString), .text("snooze"), .real(1_795_332_600), .text("UTC"), .text("cli"), .text("{}"), .integer(1)]) == nil,
                "too few columns")
    }

    @Test("the payload is read by SQLite's JSON functions: only a JSON object, each field only with its own type")
    func payloadFields() throws {
        // Not a JSON object: the entry cannot be read (and the query does not fail).
        for payload: DatabaseValueConvertible? in ["[1]", "7", "\"text\"", "null", "{", "{\"late\": tru}", "{'late': true}",
                                                   "{late: true}", "", Data([0x7B, 0x7D]), nil] {
            #expect(try decoded(kind: "snooze", payload: payload) == nil, "payload \(String(describing: payload))")
        }
        #expect(try decoded(kind: "snooze", payload: "{}")?.kind == .snooze)
        #expect(try decoded(kind: "snooze", payload: " { \"other\": [1, {\"x\": null}] } ")?.kind == .snooze)
        // targetMinutes: a whole number (a real too), else the default.
        #expect(try decoded(payload: "{\"targetMinutes\":150.0}")?.kind == .dose1(targetMinutes: 150))
        #expect(try decoded(payload: "{\"targetMinutes\":1.8e2}")?.kind == .dose1(targetMinutes: 180))
        for odd in ["150.5", "true", "\"150\"", "null", "1e30", "[150]", "{\"v\":150}"] {
            #expect(try decoded(payload: "{\"targetMinutes\":\(odd)}")?.kind == .dose1(targetMinutes: DoseRules.defaultTarget), "\(odd)")
        }
        #expect(try decoded(payload: "{}")?.kind == .dose1(targetMinutes: DoseRules.defaultTarget))
        // late: a JSON boolean only (1 and "yes" are not).
        #expect(try decoded(kind: "dose2", payload: "{\"late\":true}")?.kind == .dose2(late: true))
        #expect(try decoded(kind: "dose2", payload: "{\"late\":false}")?.kind == .dose2(late: false))
        for odd in ["1", "\"yes\"", "\"true\"", "null", "[true]"] {
            #expect(try decoded(kind: "dose2", payload: "{\"late\":\(odd)}")?.kind == .dose2(late: false), "\(odd)")
        }
        // reason and undoes: strings, escapes decoded.
        #expect(try decoded(kind: "skip", payload: "{\"reason\":\"side\\u002deffects\"}")?.kind == .skip(.sideEffects))
        #expect(try decoded(kind: "skip", payload: "{\"reason\":5}")?.kind == .skip(nil))
        #expect(try decoded(kind: "skip", payload: "{\"reason\":\"nonsense\"}")?.kind == .skip(nil))
        let target = UUID()
        #expect(try decoded(kind: "undo", payload: "{\"undoes\":\"\(target.uuidString)\"}")?.kind == .undo(of: target))
        #expect(try decoded(kind: "undo", payload: "{\"undoes\":\"not-a-uuid\"}") == nil)
        #expect(try decoded(kind: "undo", payload: "{\"undoes\":42}") == nil)
    }

    /// 8-4-4-4-12 ASCII hex digits.
    static func canonicalShape(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 36 && bytes.indices.allSatisfy { i in
            [8, 13, 18, 23].contains(i) ? bytes[i] == UInt8(ascii: "-") : Character(UnicodeScalar(bytes[i])).isHexDigit && bytes[i] < 128
        }
    }

    @Test("ids are read as UUID(uuidString:) reads them, in either case, but only as 8-4-4-4-12 hex digits")
    func uuidText() async {
        #expect(DoseEventRow.uuid("f3636ea6-6bc1-4ae1-921c-009f12bda550") == UUID(uuidString: "F3636EA6-6BC1-4AE1-921C-009F12BDA550"))
        // What Foundation's sscanf also takes, and the store never writes: refused.
        for lax in [" 3636EA6-6BC1-4AE1-921C-009F12BDA550", "+3636EA6-6BC1-4AE1-921C-009F12BDA550", "0x636EA6-6BC1-4AE1-921C-009F12BDA550"] {
            #expect(DoseEventRow.uuid(lax) == nil, "\(lax)")
        }
        for text in ["", "-", "F3636EA6-6BC1-4AE1-921C-009F12BDA55", "F3636EA6-6BC1-4AE1-921C-009F12BDA5500",
                     "F3636EA66BC1-4AE1-921C-009F12BDA5500", "F3636EA6-6BC1-4AE1-921C-009F12BDA55G", "F3636EA6_6BC1_4AE1_921C_009F12BDA550",
                     "F3636EA6-6BC1-4AE1-921C-009F12BDA55\u{0}", "F3636EA6-6BC1-4AE1-921C-009F12BDA55é", "Ｆ3636EA6-6BC1-4AE1-921C-009F12BDA550",
                     "f3636ea6-6bc1-4ae1-921c-009f12bda550", "F3636EA6-6BC1-4AE1-921C-009F12BDA550"] {
            #expect(DoseEventRow.uuid(text) == (Self.canonicalShape(text) ? UUID(uuidString: text) : nil), "\(text.debugDescription)")
        }
        await propertyCheck(count: 3000, input: Gen.int(in: 0...2), Gen.int(in: 0...40), Gen.int(in: 0...127)) { change, at, byte in
            var text = Array(UUID().uuidString.utf8)
            if Bool.random() { text = Array(String(decoding: text, as: UTF8.self).lowercased().utf8) }
            switch change {
            case 0 where at < text.count: text[at] = UInt8(byte)
            case 1 where at <= text.count: text.insert(UInt8(byte), at: at)
            case 2 where at < text.count: text.remove(at: at)
            default: break
            }
            let shown = String(decoding: text, as: UTF8.self)
            #expect(DoseEventRow.uuid(shown) == (Self.canonicalShape(shown) ? UUID(uuidString: shown) : nil), "\(shown.debugDescription)")
            if Self.canonicalShape(shown) { #expect(DoseEventRow.uuid(shown) != nil) }
        }
    }

    @Test("what the store writes, it reads back: every kind through DoseRepository")
    func roundTrip() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-format-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let repository = DoseRepository(database: try DoseTapDatabase(directory: dir))
        let start = Date(timeIntervalSince1970: 1_795_332_600)
        let first = DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 195), at: start, timeZone: "Europe/Paris", source: .button)
        let events = [first,
                      DoseEvent(id: UUID(), kind: .snooze, at: start.addingTimeInterval(60), timeZone: "Europe/Paris", source: .cli),
                      DoseEvent(id: UUID(), kind: .dose2(late: true), at: start.addingTimeInterval(120), timeZone: "Europe/Paris", source: .web),
                      DoseEvent(id: UUID(), kind: .undo(of: first.id), at: start.addingTimeInterval(180), timeZone: "Europe/Paris", source: .cli),
                      DoseEvent(id: UUID(), kind: .skip(.windowExpired), at: start.addingTimeInterval(240), timeZone: "Europe/Paris", source: .cli),
                      DoseEvent(id: UUID(), kind: .skip(nil), at: start.addingTimeInterval(300), timeZone: "Europe/Paris", source: .cli)]
        try repository.append(events)
        #expect(try repository.allEvents() == events)
        #expect(try repository.unreadableEntries().isEmpty)
    }
}
