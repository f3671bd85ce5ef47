import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
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

    @Test("a row decodes by its storage classes: text, a time as a real or an integer, a JSON payload")
    func decodeRows() {
        let id = UUID()
        func row(_ kind: StoredValue = .text("dose1"), at: StoredValue = .real(1_795_332_600.25), payload: StoredValue = .text("{\"targetMinutes\":165}"),
                 source: StoredValue = .text("cli")) -> [StoredValue] {
            [.text(id.uuidString), kind, at, .text("America/New_York"), source, payload, .integer(1)]
        }
        let event = DoseEventRow.decode(row())
        #expect(event?.kind == .dose1(targetMinutes: 165))
        #expect(event?.at == Date(timeIntervalSince1970: 1_795_332_600.25))
        #expect(DoseEventRow.decode(row(at: .integer(1_795_332_600)))?.at == Date(timeIntervalSince1970: 1_795_332_600))
        #expect(DoseEventRow.decode(row(.text("dose2"), payload: .text("{}")))?.kind == .dose2(late: false))
        // Unreadable: a time as text, out of the plausible range or not finite; an unknown kind or source; a payload
        // that is not a JSON object; a column of another class; too few columns.
        #expect(DoseEventRow.decode(row(at: .text("1795332600"))) == nil)
        #expect(DoseEventRow.decode(row(at: .real(946_684_799))) == nil)
        #expect(DoseEventRow.decode(row(at: .real(7_258_118_401))) == nil)
        #expect(DoseEventRow.decode(row(at: .real(.nan))) == nil)
        #expect(DoseEventRow.decode(row(.text("dose3"))) == nil)
        #expect(DoseEventRow.decode(row(source: .text("radio"))) == nil)
        #expect(DoseEventRow.decode(row(payload: .text("[1]"))) == nil)
        #expect(DoseEventRow.decode(row(payload: .blob)) == nil)
        #expect(DoseEventRow.decode(row(.text("undo"), payload: .text("{}"))) == nil)
        #expect(DoseEventRow.decode(Array(row().prefix(5))) == nil)
    }
}
