import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("The backup cascade of one occurrence (#12): every 2 minutes, Snooze 9, only Stop resolves")
struct BackupCascadeTests {
    let t = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ minutes: Double) -> Date { t.addingTimeInterval(minutes * 60) }

    @Test("nobody answers: T+2 the first backup, T+4 the second, T+6 the third, T+8 all tried (once)")
    func silence() {
        var c = BackupCascade(occurrence: t, count: 3)
        #expect(c.due(at: at(1.99)) == [])
        #expect(c.wakeAt == at(2))
        #expect(c.due(at: at(2)) == [.fire(index: 0, round: 0)])
        #expect(c.due(at: at(3.99)) == [])
        #expect(c.due(at: at(4)) == [.fire(index: 1, round: 0)])
        #expect(c.due(at: at(6)) == [.fire(index: 2, round: 0)])
        #expect(c.due(at: at(8)) == [.allTried])
        #expect(c.due(at: at(60)) == [] && c.wakeAt == nil)
    }

    @Test("a machine that slept through: what is due fires at once, in order")
    func catchUp() {
        var c = BackupCascade(occurrence: t, count: 2)
        #expect(c.due(at: at(7)) == [.fire(index: 0, round: 0), .fire(index: 1, round: 0), .allTried])
    }

    @Test("Stop anywhere: nothing more fires, and a later snooze changes nothing")
    func stop() {
        var c = BackupCascade(occurrence: t, count: 3)
        _ = c.due(at: at(2))
        c.stop()
        c.snooze(at: at(3), target: 0)
        #expect(c.due(at: at(30)) == [] && c.wakeAt == nil)
    }

    @Test("Snooze on a backup: 9 minutes, then the same target again, then the escalation goes on; unlimited")
    func snooze() {
        var c = BackupCascade(occurrence: t, count: 3)
        #expect(c.due(at: at(2)) == [.fire(index: 0, round: 0)])
        c.snooze(at: at(3), target: 0)
        #expect(c.due(at: at(4)) == [], "paused: the second backup waits")
        #expect(c.due(at: at(12)) == [.fire(index: 0, round: 1)])
        c.snooze(at: at(12.5), target: 0)
        #expect(c.due(at: at(21.5)) == [.fire(index: 0, round: 2)])
        #expect(c.due(at: at(23.5)) == [.fire(index: 1, round: 0)])
        c.snooze(at: at(24), target: 2)
        #expect(c.due(at: at(25.5)) == [.fire(index: 2, round: 0)], "a target that has not fired cannot be snoozed")
    }

    @Test("Snooze on the primary before any backup: it rings again itself at +9, the first backup 2 minutes after")
    func primarySnooze() {
        var c = BackupCascade(occurrence: t, count: 1)
        c.snooze(at: at(1), target: nil)
        #expect(c.due(at: at(2)) == [])
        #expect(c.wakeAt == at(12))
        #expect(c.due(at: at(12)) == [.fire(index: 0, round: 0)])
    }

    @Test("no backups: all tried at T+2, once")
    func empty() {
        var c = BackupCascade(occurrence: t, count: 0)
        #expect(c.due(at: at(2)) == [.allTried])
        #expect(c.due(at: at(3)) == [])
    }

    @Test("property: never after Stop, never early, each target's round at most once, first rounds in order")
    func property() async {
        // Each step: 0 advance, 1 stop, 2 snooze a target, 3 snooze the primary; with a number of seconds.
        await propertyCheck(count: 500, input: Gen.int(in: 0...5), Gen.int(in: 0...3).array(of: 1...40),
                            Gen.int(in: 1...900).array(of: 40...40), Gen.int(in: 0...4).array(of: 40...40)) { count, kinds, seconds, targets in
            var c = BackupCascade(occurrence: t, count: count)
            var now = t
            var stopped = false
            var seen = Set<String>()
            var firstRounds: [Int] = []
            for (i, kind) in kinds.enumerated() {
                now = now.addingTimeInterval(Double(seconds[i]))
                switch kind {
                case 1: c.stop(); stopped = true
                case 2: c.snooze(at: now, target: targets[i] % max(1, count))
                case 3: c.snooze(at: now, target: nil)
                default: break
                }
                for action in c.due(at: now) {
                    #expect(!stopped, "fired after Stop")
                    if case .fire(let index, let round) = action {
                        #expect(seen.insert("\(index).\(round)").inserted, "target \(index) round \(round) fired twice")
                        if round == 0 {
                            #expect(now >= t.addingTimeInterval(BackupCascade.escalation * Double(index + 1)), "fired early")
                            firstRounds.append(index)
                        }
                    }
                }
            }
            #expect(firstRounds == Array(0..<firstRounds.count), "first rounds out of order: \(firstRounds)")
        }
    }
}
