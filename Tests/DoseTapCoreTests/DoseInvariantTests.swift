import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// Safety invariants over random sequences of inputs, sources, delays and times.
@Suite("Dose safety invariants (property-based)")
struct DoseInvariantTests {
    static let steps = 40
    let ny = TimeZone(identifier: "America/New_York")!
    let tokyo = TimeZone(identifier: "Asia/Tokyo")!

    func command(_ n: Int) -> DoseCommand {
        switch n {
        case 0, 1, 2: .take(confirmLate: false)
        case 3: .take(confirmLate: true)
        case 4: .snooze
        case 5: .skip([SkipReason.alert, .sideEffects, .other][n % 3])
        case 6: .undo
        default: .autoSkip(.windowExpired)
        }
    }

    struct Accepted {
        var event: DoseEvent
        var input: DoseInput
    }

    /// Runs one random night sequence and returns what was accepted, with the inputs that caused it.
    func run(commands: [Int], advances: [Double], delays: [Double], sources: [Int], zones: [Bool]) -> (NightDriver, [Accepted]) {
        var night = NightDriver(zone: ny)
        var now = localDate("2026-03-07 21:00:00", ny) // a DST night on purpose
        var accepted: [Accepted] = []
        for i in 0..<Self.steps {
            // Mostly minutes; sometimes seconds (undo), sometimes hours (the next night).
            let a = advances[i]
            now = now.addingTimeInterval(a < 5 ? a : a < 30 ? (a - 5) * 60 * 4 : (a - 30) * 3600)
            let source = InputSource.allCases[sources[i] % InputSource.allCases.count]
            let input = DoseInput(command: command(commands[i]), source: source, issuedAt: now.addingTimeInterval(-delays[i]))
            let zone = zones[i] ? tokyo : ny
            let decision = DosePolicy.decide(input, log: night.log, now: now, timeZone: zone, targetMinutes: 165)
            if case .record(let kind, _) = decision {
                let event = DoseEvent(id: UUID(), kind: kind, at: now, timeZone: zone.identifier, source: source)
                night.events.append(event)
                accepted.append(Accepted(event: event, input: input))
            }
        }
        return (night, accepted)
    }

    static let commands = Gen.int(in: 0...7).array(of: steps)
    static let advances = Gen.double(in: 0...40).array(of: steps)
    static let delays = Gen.double(in: 0...6).array(of: steps)
    static let sources = Gen.int(in: 0...4).array(of: steps)
    static let zones = Gen.int(in: 0...3).map { $0 == 0 }.array(of: steps)

    @Test("Dose 2 is never recorded before 150 min, never twice, and never late from a button")
    func dose2() async {
        await propertyCheck(count: 300, input: Self.commands, Self.advances, Self.delays, Self.sources, Self.zones) { c, a, d, s, z in
            let (night, accepted) = run(commands: c, advances: a, delays: d, sources: s, zones: z)
            let undone = Set(night.events.compactMap { e -> UUID? in if case .undo(let t) = e.kind { return t } else { return nil } })
            var dose1At: Date?
            var dose2Count = 0
            for e in night.events where !undone.contains(e.id) {
                switch e.kind {
                case .dose1:
                    dose1At = e.at
                    dose2Count = 0
                case .dose2(let late):
                    dose2Count += 1
                    #expect(dose2Count == 1, "two Dose 2s in one night")
                    let elapsed = e.at.timeIntervalSince(dose1At!)
                    if late {
                        #expect(elapsed >= DoseRules.windowCloses && elapsed < DoseRules.windowCloses + DoseRules.lateGrace)
                        #expect(e.source != .button)
                    } else {
                        #expect(elapsed >= DoseRules.windowOpens && elapsed < DoseRules.windowCloses)
                    }
                default: break
                }
            }
            for x in accepted {
                if case .dose2 = x.event.kind { #expect(dose1At != nil) }
            }
        }
    }

    @Test("never two Dose 1s in a night")
    func dose1() async {
        await propertyCheck(count: 300, input: Self.commands, Self.advances, Self.delays, Self.sources, Self.zones) { c, a, d, s, z in
            let (night, _) = run(commands: c, advances: a, delays: d, sources: s, zones: z)
            let nights = night.log.sessions.map(\.nightDate)
            #expect(Set(nights).count == nights.count, "\(nights)")
        }
    }

    @Test("nothing is ever recorded from an input older than 3 s")
    func stale() async {
        await propertyCheck(count: 300, input: Self.commands, Self.advances, Self.delays, Self.sources, Self.zones) { c, a, d, s, z in
            let (_, accepted) = run(commands: c, advances: a, delays: d, sources: s, zones: z)
            for x in accepted {
                if case .autoSkip = x.input.command {
                    #expect(x.event.source == .agent, "only the agent closes a night")
                    continue
                }
                #expect(abs(x.event.at.timeIntervalSince(x.input.issuedAt)) <= DoseRules.maximumInputAge)
            }
        }
    }

    @Test("the folded night depends on instants, not on the clocks on the wall")
    func wallClockIndependence() async {
        await propertyCheck(count: 200, input: Self.commands, Self.advances, Self.delays, Self.sources, Self.zones) { c, a, d, s, z in
            let (night, _) = run(commands: c, advances: a, delays: d, sources: s, zones: z)
            guard let last = night.events.last else { return }
            for probe: TimeInterval in [0, 60, 150 * 60, 230 * 60, 245 * 60] {
                let now = last.at.addingTimeInterval(probe)
                let inNewYork = night.log.status(at: now, in: ny)
                let inTokyo = night.log.status(at: now, in: tokyo)
                if let session = inNewYork.session, session.isActive(at: now) {
                    #expect(inTokyo.session == session)
                    #expect(inTokyo.phase == inNewYork.phase)
                    #expect(inTokyo.reminderAt == inNewYork.reminderAt)
                    #expect(inTokyo.minutesRemaining == inNewYork.minutesRemaining)
                }
            }
        }
    }
}
