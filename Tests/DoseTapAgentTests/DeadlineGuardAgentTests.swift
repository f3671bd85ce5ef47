import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

/// The guard at the last safe moment (#52 §3) as the agent runs it: the monitor's timers on a fake clock, logind from
/// python-dbusmock on a private system bus (its `IdleHint`, `IdleSinceHint`, `ListInhibitors`, `CanSuspend` and the
/// `Suspend` calls it records).
///
/// The alarm at 10:00 UTC is 2 h away on a fresh install at 40 % (AlarmRiskMonitorTests' numbers): the deadline is
/// 09:37:08, the nudge's timer 20 minutes before it.
@Suite("Deadline guard: the agent at the deadline, logind's mock", .serialized, .timeLimit(.minutes(2)))
struct DeadlineGuardAgentTests {
    typealias Box = AlarmRiskMonitorTests.Box
    static let deadline = AlarmRiskMonitorTests.deadline40
    static let early = deadline.addingTimeInterval(-NudgeDecision.margin)

    /// Sets a property of the mock's Manager (`org.freedesktop.DBus.Properties.Set`, which dbusmock implements).
    static func set(_ c: DBusConnection, _ name: String, _ value: DBusValue) async throws {
        _ = try await c.call(destination: LogindClient.service, path: MockLogind.path, interface: "org.freedesktop.DBus.Properties",
                             member: "Set", arguments: [.string(LogindClient.interface), .string(name), .variant(value)])
    }

    /// Every session idle since `since` (the fake clock's time).
    static func idle(_ c: DBusConnection, since: Date) async throws {
        try await set(c, "IdleHint", .bool(true))
        try await set(c, "IdleSinceHint", .uint64(UInt64(since.timeIntervalSince1970 * 1_000_000)))
    }

    static func suspends(_ c: DBusConnection) async throws -> Int {
        let reply = try await c.call(destination: LogindClient.service, path: MockLogind.path, interface: "org.freedesktop.DBus.Mock",
                                     member: "GetMethodCalls", arguments: [.string("Suspend")])
        return reply.first?.array?.count ?? -1
    }

    /// The harness with the guard through the mock's logind; the notifications it shows are recorded.
    static func harness(_ bus: PrivateBus.Bus, mode: SleepGuardMode, wake: FakeWakeAlarm = FakeWakeAlarm(),
                        notes: Box<[String]>) throws -> AlarmRiskMonitorTests.Harness {
        var guardian = AlarmRiskMonitor.Guardian.logind(connect: { try DBusConnection(bus: .address(bus.address)) }, wake: wake,
                                                        desktop: nil, logger: Logger(label: "t") { _ in InMemoryLogHandler() })
        guardian.notify = { text in notes.update { $0.append(text) } }
        return AlarmRiskMonitorTests.Harness([try AlarmRiskMonitorTests.alarm()], guardMode: mode, guardian: guardian)
    }

    static func logged(_ h: AlarmRiskMonitorTests.Harness, _ prefix: String) async -> Bool {
        await MockLogind.eventually { h.logs.entries.contains { $0.message.description.hasPrefix(prefix) } }
    }

    @Test("left awake past its deadline: the nudge 20 minutes before, again at the deadline; in use it waits; idle 2 minutes, logind suspends it")
    func suspendsWhenIdle() async throws {
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let notes = Box<[String]>([])
            let h = try Self.harness(bus, mode: .sleep, notes: notes)
            h.start()
            var plays = h.plays.makeAsyncIterator()
            h.readFresh(level: 40)
            await h.clock.waitForSleepers(1)
            #expect(h.clock.deadlines == [Self.early])
            h.clock.set(Self.early)
            #expect(await plays.next()?.nudge.deadlineText == "At risk unless this machine sleeps or is plugged in by 09:37.")
            // Then the guard's own timer, at the deadline itself.
            await h.clock.waitForSleepers(1)
            #expect(h.clock.deadlines == [Self.deadline])
            h.clock.set(Self.deadline.addingTimeInterval(-1))
            #expect(h.clock.sleeperCount == 1, "not a second early")

            // Someone is still up (the mock's IdleHint is false): the nudge again, so they hear it; no suspend.
            h.clock.set(Self.deadline)
            #expect(await plays.next()?.nudge.severity == .warning)
            #expect(await Self.logged(h, "the sleep guard waits: someone is using it"))
            await h.clock.waitForSleepers(1)
            #expect(h.clock.deadlines == [Self.deadline.addingTimeInterval(DeadlineGuard.retry)])
            #expect(try await Self.suspends(c) == 0)

            // Idle for 1 minute only at the next decision: it waits on.
            try await Self.idle(c, since: Self.deadline)
            h.clock.set(Self.deadline.addingTimeInterval(DeadlineGuard.retry))
            #expect(await Self.logged(h, "the sleep guard waits: idle for 60 s"))
            await h.clock.waitForSleepers(1)
            #expect(try await Self.suspends(c) == 0)

            // Idle 2 minutes: the notification, then Suspend(false).
            h.clock.set(Self.deadline.addingTimeInterval(2 * DeadlineGuard.retry))
            #expect(try await MockLogind.eventually { try await Self.suspends(c) == 1 })
            #expect(notes.get() == ["Going to sleep to keep the 10:00 alarm: battery 40 %"])
            #expect(await Self.logged(h, "the sleep guard: Going to sleep to keep the 10:00 alarm: battery 40 %"))
            try await h.finish()
            #expect(h.played.get().count == 2, "the nudge before the deadline and at it, never a third time")
        }
    }

    enum Refusal: String, CaseIterable, Sendable {
        case blocked, cannotWake, inUse, nudgeOnly, off
    }

    @Test("not suspended: a blocking inhibitor, a machine that cannot wake, a session in use, guard = nudge or off", arguments: Refusal.allCases)
    func notSuspended(_ refusal: Refusal) async throws {
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let notes = Box<[String]>([])
            let wake = FakeWakeAlarm(refusal == .cannotWake ? .failure(WakeUnavailable(reason: "no RTC wake alarm", fix: "see docs")) : .success(.alarmTimer))
            let mode: SleepGuardMode = switch refusal {
            case .nudgeOnly: .nudge
            case .off: .off
            default: .sleep
            }
            let h = try Self.harness(bus, mode: mode, wake: wake, notes: notes)
            var lock: [DBusValue] = []
            if refusal == .blocked {
                lock = try await c.call(destination: LogindClient.service, path: MockLogind.path, interface: LogindClient.interface,
                                        member: "Inhibit", arguments: [.string("sleep"), .string("Totem"), .string("Playing"), .string("block")])
            }
            if refusal != .inUse { try await Self.idle(c, since: Self.deadline.addingTimeInterval(-3600)) }
            h.start()
            var plays = h.plays.makeAsyncIterator()
            h.readFresh(level: 40)
            await h.clock.waitForSleepers(1)
            h.clock.set(Self.early)
            #expect(await plays.next() != nil, "the nudge 20 minutes before plays whatever the guard")
            // The guard off sets no timer for the deadline: nothing more happens (counted after the end).
            if refusal != .off {
                await h.clock.waitForSleepers(1)
                h.clock.set(Self.deadline)
                #expect(await plays.next() != nil, "the nudge again at the deadline")
            }
            switch refusal {
            case .blocked: #expect(await Self.logged(h, "the sleep guard waits: Totem keeps it from sleeping"))
            case .cannotWake:
                #expect(await Self.logged(h, "the sleep guard will not suspend this machine: it cannot wake itself for the alarm: no RTC wake alarm"))
            case .inUse: #expect(await Self.logged(h, "the sleep guard waits: someone is using it"))
            case .nudgeOnly, .off: break
            }
            try await h.finish()
            #expect(try await Self.suspends(c) == 0)
            #expect(notes.get().isEmpty)
            #expect(h.played.get().count == (refusal == .off ? 1 : 2))
            withExtendedLifetime(lock) {}
        }
    }
}
