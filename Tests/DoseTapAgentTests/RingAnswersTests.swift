import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Synchronization
import Testing

/// `RingAnswers` (#26): one use case ends a ring, whatever rang it — this machine's own alarm and a
/// household backup ringing here are stopped or snoozed by the same `AlarmUseCases` the command line and the
/// dashboard call, and the services holding them are told to look again.
@Suite("One answer for every alarm ringing here: own and backup, through the one use case")
struct RingAnswersTests {
    final class Holder: RingHolder {
        let ringing: Bool
        let own: Int?
        let pokes = Mutex(0)
        init(ringing: Bool, own: Int? = nil) {
            self.ringing = ringing
            self.own = own
        }
        var ownAlarmRinging: Int? { own }
        var isRinging: Bool { ringing }
        func claimsButtons(at now: Date) -> Bool { ringing }
        func poke() { pokes.withLock { $0 += 1 } }
    }

    static let now = Date(timeIntervalSince1970: 1_772_427_660)   // 2026-03-02 05:01 UTC

    struct World {
        let database: DoseTapDatabase
        let clock: FakeClock
        let alarms: AlarmUseCases
        var rings: AlarmRingRepository { AlarmRingRepository(database: database) }
        var backups: HouseholdRepository { HouseholdRepository(database: database) }
    }

    func world() throws -> World {
        let database = try DoseTapDatabase(directory: freshDataFolder("dosetap-ringing-alarms"))
        let clock = FakeClock(Self.now)
        return World(database: database, clock: clock, alarms: AlarmUseCases(store: DataStore(database: database), clock: clock, battery: { nil }))
    }

    /// This machine's alarm 05:00 ringing since 05:00, and a backup of jen-laptop's alarm ringing since 05:01.
    func bothRinging(_ w: World) throws -> (own: AlarmRing, backup: HouseholdRepository.BackupRing) {
        let id = try w.alarms.add(.init(time: "05:00", label: "Mine", repetition: "daily")).alarm.id
        let own = try w.rings.start(.init(alarmID: id, kind: .scheduled, dueAt: Self.now.addingTimeInterval(-60)), at: Self.now.addingTimeInterval(-60))
        let occurrence = OccurrenceKey(owner: "jen-laptop", alarmID: 1, at: Int64(Self.now.timeIntervalSince1970) - 120)
        let backup = try #require(try w.backups.startRing(SlotKey(occurrence: occurrence, target: 0, at: Int64(Self.now.timeIntervalSince1970)),
                                                          label: "Wake", time: "04:59", at: Self.now))
        return (own, backup)
    }

    @Test("Stop with both ringing: each is stopped once, by the button, and both holders look again")
    func stopBoth() throws {
        let w = try world()
        let (own, backup) = try bothRinging(w)
        let holders = [Holder(ringing: true), Holder(ringing: true)]
        let ringing = RingAnswers(alarms: w.alarms, holders: holders, logger: Logger(label: "test"))
        #expect(ringing.isRinging && ringing.claimsButtons(at: Self.now))
        #expect(ringing.stop(by: .button))
        #expect(try w.rings.ring(id: own.id)?.outcome == .stopped && w.rings.ring(id: own.id)?.endedBy == .button)
        #expect(try w.backups.ring(id: backup.id)?.outcome == .stopped && w.backups.ring(id: backup.id)?.endedBy == .button)
        #expect(holders.allSatisfy { $0.pokes.withLock { $0 } == 1 })
    }

    @Test("the household's Stop of our alarm: only the alarm ringing here by that id is stopped (by the household); another id does nothing")
    func householdStopsOwn() throws {
        let w = try world()
        let id = try w.alarms.add(.init(time: "05:00", label: "Mine", repetition: "daily")).alarm.id
        let own = try w.rings.start(.init(alarmID: id, kind: .scheduled, dueAt: Self.now.addingTimeInterval(-60)), at: Self.now.addingTimeInterval(-60))
        let holder = Holder(ringing: true, own: id)
        let ringing = RingAnswers(alarms: w.alarms, holders: [holder], logger: Logger(label: "test"))
        #expect(!ringing.stop(ownAlarm: id + 1, by: .household))
        #expect(try w.rings.ring(id: own.id)?.outcome == .ringing)
        #expect(holder.pokes.withLock { $0 } == 0)
        #expect(ringing.stop(ownAlarm: id, by: .household))
        #expect(try w.rings.ring(id: own.id)?.outcome == .stopped && w.rings.ring(id: own.id)?.endedBy == .household)
        #expect(holder.pokes.withLock { $0 } == 1)
    }

    @Test("Snooze with only the backup ringing: the backup is snoozed; the own alarm's history is untouched")
    func snoozeBackup() throws {
        let w = try world()
        let occurrence = OccurrenceKey(owner: "jen-laptop", alarmID: 1, at: Int64(Self.now.timeIntervalSince1970) - 120)
        let backup = try #require(try w.backups.startRing(SlotKey(occurrence: occurrence, target: 0, at: Int64(Self.now.timeIntervalSince1970)),
                                                          label: "Wake", time: "04:59", at: Self.now))
        let holder = Holder(ringing: true)
        let ringing = RingAnswers(alarms: w.alarms, holders: [Holder(ringing: false), holder], logger: Logger(label: "test"))
        #expect(ringing.snooze(by: .notification))
        #expect(try w.backups.ring(id: backup.id)?.outcome == .snoozed && w.backups.ring(id: backup.id)?.endedBy == .notification)
        #expect(try w.rings.ringing() == nil)
        #expect(holder.pokes.withLock { $0 } == 1)
    }

    @Test("nothing ringing (or a ring past its ten minutes): false, nothing written, nobody poked")
    func nothing() throws {
        let w = try world()
        let holder = Holder(ringing: false)
        let ringing = RingAnswers(alarms: w.alarms, holders: [holder], logger: Logger(label: "test"))
        #expect(!ringing.stop(by: .button) && !ringing.snooze(by: .button))
        // A row left ringing by an agent that died, eleven minutes ago: not a ring any more.
        let id = try w.alarms.add(.init(time: "04:50", label: "Old", repetition: "daily")).alarm.id
        let stale = try w.rings.start(.init(alarmID: id, kind: .scheduled, dueAt: Self.now.addingTimeInterval(-660)), at: Self.now.addingTimeInterval(-660))
        let believer = Holder(ringing: true)
        #expect(!RingAnswers(alarms: w.alarms, holders: [believer], logger: Logger(label: "test")).stop(by: .button))
        #expect(try w.rings.ring(id: stale.id)?.outcome == .ringing)
        #expect(holder.pokes.withLock { $0 } == 0 && believer.pokes.withLock { $0 } == 0)
    }
}
