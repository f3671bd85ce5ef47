import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Testing

/// #51: the alarm sounds first and the reminder fires once, whatever the store does. Another process (`sqlite3`)
/// holds the database's write lock across the due instant; the agent's services ring and remind on time, keep
/// what they could not record in memory, try again on the back-off, and write it all once the lock is released.
extension AlarmServiceTests {
    @Test("a write lock held across the alarm: it rings at once, Stop works, and the ring is recorded once the lock is gone")
    func ringsWhileLocked() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            #expect(await setAndTick(w, "06:29:00") == at("06:30:00"))
            let lock = try HeldWriteLock(database: w.database.path)
            let wake = await setAndTick(w, "06:30:00")
            #expect(w.service.isRinging, "rung in the same pass, the store locked")
            #expect(try await eventually { !w.player.sounds.isEmpty })
            #expect(w.service.unsavedRings.map(\.outcome) == [.ringing])
            #expect(try w.rings.history(alarmID: id).isEmpty, "nothing could be written")
            // Looked at again at the retry, not at once; never later than when it gives up.
            let retry = try #require(wake)
            #expect(retry > at("06:30:00"))
            #expect(retry <= at("06:40:00"))
            // Stop from a button: the use case cannot write, the ring ends here all the same.
            #expect(w.ringing.stop(by: .button))
            #expect(!w.service.isRinging)
            _ = await setAndTick(w, "06:30:30")
            #expect(!w.service.isRinging, "not rung again while its answer is unsaved")
            #expect(w.service.unsavedRings.map(\.outcome) == [.stopped])
            lock.release()
            _ = await setAndTick(w, "06:35:00")
            #expect(w.service.unsavedRings.isEmpty)
            #expect(try lastEnd(w, id) == "stopped button")
            #expect(try w.rings.history(alarmID: id).count == 1)
            #expect(w.service.nextAt == localDate("2026-01-16 06:30:00", ny))
        }
    }

    @Test("a snooze while the store is locked rings again nine minutes later; both rings are recorded after")
    func snoozeWhileLocked() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            let lock = try HeldWriteLock(database: w.database.path)
            _ = await setAndTick(w, "06:30:00")
            #expect(w.service.isRinging)
            #expect(w.ringing.snooze(by: .button))
            #expect(!w.service.isRinging)
            #expect(await setAndTick(w, "06:38:59") == at("06:39:00"))
            #expect(!w.service.isRinging)
            _ = await setAndTick(w, "06:39:00")
            #expect(w.service.isRinging, "the snooze kept in memory rings")
            #expect(w.ringing.stop(by: .button))
            lock.release()
            _ = await setAndTick(w, "06:50:00")
            #expect(w.service.unsavedRings.isEmpty)
            #expect(try w.rings.history(alarmID: id).map { "\($0.kind.rawValue) \($0.outcome.rawValue)" }
                    == ["scheduled snoozed", "snooze stopped"])
        }
    }

    @Test("unanswered while locked: ten minutes, then missed once; the miss is recorded after")
    func missedWhileLocked() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            let lock = try HeldWriteLock(database: w.database.path)
            _ = await setAndTick(w, "06:30:00")
            _ = await setAndTick(w, "06:40:00")
            #expect(!w.service.isRinging)
            let shown = try await notifications(w, count: 2)
            #expect(shown.last?.summary == "Missed alarm 06:30")
            _ = await setAndTick(w, "06:41:00")
            #expect(try await calls(w, "Notify").count == 2, "told once")
            lock.release()
            _ = await setAndTick(w, "06:50:00")
            #expect(try lastEnd(w, id) == "missed timeout")
        }
    }
}

@Suite("DoseScheduler with the store locked: each reminder once, recorded later", .serialized, .timeLimit(.minutes(2)))
struct DoseSchedulerLockedTests {
    let ny = TimeZone(identifier: "America/New_York")!
    var t0: Date { localDate("2026-01-15 22:30:00", ny) }
    func at(_ minutes: Double) -> Date { t0.addingTimeInterval(minutes * 60) }

    @Test("the window opens while another process holds the write lock: one notification however often it looks, saved after")
    func onceWhileLocked() throws {
        let dir = freshDataFolder("dosetap-sched-locked")
        let database = try DoseTapDatabase(directory: dir)
        let repo = DoseRepository(database: database)
        let clock = FakeClock(t0, timeZone: ny)
        let notifier = RecordingNotifier()
        _ = try repo.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: t0), now: t0, timeZone: ny)
        let scheduler = DoseScheduler(repository: repo, clock: clock, notifier: notifier, logger: Logger(label: "test"), databaseChanges: nil)
        #expect(scheduler.tick() == at(150))
        let lock = try HeldWriteLock(database: database.path)
        clock.set(at(150))
        let retry = try #require(scheduler.tick())
        #expect(notifier.titles == ["Dose window now open"])
        #expect(retry == at(150).addingTimeInterval(5), "tried again 5 s later, not at once")
        // Every wake-up before and at the retry (a database change, a poke): no second notification.
        for step in 0..<20 {
            clock.set(at(150).addingTimeInterval(Double(step)))
            #expect(scheduler.tick() ?? .distantFuture > clock.now())
        }
        #expect(notifier.titles == ["Dose window now open"])
        #expect(scheduler.unsavedReminders == 1)
        #expect(try repo.firedReminders(session: try #require(try repo.recentLog(now: at(150)).sessions.last).id).isEmpty)
        lock.release()
        clock.set(at(152))
        #expect(scheduler.tick() == at(165))
        #expect(scheduler.unsavedReminders == 0)
        #expect(try repo.firedReminders(session: try #require(try repo.recentLog(now: at(152)).sessions.last).id).map(\.kind) == [.windowOpen])
        // A restart after it was saved does not fire it again.
        let restarted = DoseScheduler(repository: repo, clock: clock, notifier: notifier, logger: Logger(label: "test"), databaseChanges: nil)
        restarted.tick()
        #expect(notifier.titles == ["Dose window now open"])
        clock.set(at(165))
        scheduler.tick()
        #expect(notifier.titles == ["Dose window now open", "Time for Dose 2"])
    }
}
