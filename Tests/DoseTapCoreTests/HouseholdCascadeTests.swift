import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("The household cascade (#12): who fires which slot, from plans, answers, claims and presence")
struct HouseholdCascadeTests {
    static let t: Int64 = 1_800_000_000
    let key = OccurrenceKey(owner: "jen-laptop", alarmID: 3, at: HouseholdCascadeTests.t)
    var occurrence: KnownOccurrence {
        KnownOccurrence(key: key, label: "Wake", time: "05:00",
                        targets: [.device("bedroom-pi"), .push("https://ntfy.sh/jen"), .phone("+15551234567")], heldAt: at(-60))
    }
    func at(_ minutes: Double) -> Date { Date(timeIntervalSince1970: TimeInterval(Self.t) + minutes * 60) }
    func slot(_ target: Int, _ minutes: Double) -> SlotKey {
        SlotKey(occurrence: key, target: target, at: Self.t + Int64(minutes * 60))
    }
    /// The owner was seen online, then gone 30 minutes before T; the call's number is allowed here.
    func view(_ me: String, answers: [CascadeAnswer] = [], done: [SlotKey: SlotOutcome] = [:], claims: [SlotKey: SlotClaim] = [:],
              online: Set<String>, occurrence: KnownOccurrence? = nil, departed: [String: Date]? = nil,
              callable: Set<String> = ["+15551234567"]) -> HouseholdCascade.View {
        HouseholdCascade.View(me: me, occurrences: [occurrence ?? self.occurrence], answers: answers, done: done, claims: claims, online: online,
                              departed: departed ?? ["jen-laptop": at(-30)], callable: callable)
    }

    @Test("the device target rings its own slot at T+2 (not a second before), only there, once")
    func deviceSlot() {
        let online: Set = ["jen-laptop", "bedroom-pi", "kitchen"]
        #expect(HouseholdCascade.decide(view("bedroom-pi", online: online), now: at(1.99)).decisions == [])
        #expect(HouseholdCascade.decide(view("bedroom-pi", online: online), now: at(1.99)).wakeAt == at(2))
        #expect(HouseholdCascade.decide(view("bedroom-pi", online: online), now: at(2)).decisions == [.ring(slot(0, 2), occurrence, round: 0)])
        #expect(HouseholdCascade.decide(view("kitchen", online: online), now: at(2)).decisions == [])
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: [slot(0, 2): .rang], online: online), now: at(3)).decisions == [])
    }

    @Test("a Stop before the slot: nothing fires anywhere; a Stop after it: nothing more")
    func stop() {
        let stop = CascadeAnswer(key: key, kind: .stop, target: nil, at: Self.t + 60, by: "jen-laptop")
        for me in ["jen-laptop", "bedroom-pi", "kitchen"] {
            #expect(HouseholdCascade.decide(view(me, answers: [stop], online: []), now: at(30)).decisions == [])
        }
        let late = CascadeAnswer(key: key, kind: .stop, target: nil, at: Self.t + 150, by: "bedroom-pi")
        #expect(HouseholdCascade.decide(view("jen-laptop", answers: [late], online: ["jen-laptop"]), now: at(30)).decisions == [],
                "the owner has no device slot, and nothing comes after the Stop")
        let progress = HouseholdCascade.progress(of: occurrence, answers: [late], now: at(30))
        #expect(progress.slots.map(\.key) == [slot(0, 2)] && progress.finished && progress.nextAt == nil)
    }

    @Test("#51 finding 9: at most sendsPerOccurrence pushes and calls for one occurrence; the next is capped, not sent")
    func capPerOccurrence() {
        let phones = (0..<6).map { BackupTarget.phone("+1555123456\($0)") }
        let many = KnownOccurrence(key: key, label: "Wake", time: "05:00", targets: phones, heldAt: at(-60))
        var done: [SlotKey: SlotOutcome] = [:]
        var decisions: [HouseholdCascade.Decision] = []
        // Each target's slot comes 2 minutes after the last; the owner acts at each.
        for minute in stride(from: 2.0, through: 12, by: 2) {
            for decision in HouseholdCascade.decide(view("jen-laptop", done: done, online: ["jen-laptop"], occurrence: many), now: at(minute)).decisions {
                decisions.append(decision)
                switch decision {
                case .send(let slot, _, _): done[slot] = .sent
                case .capped(let slot, _, _): done[slot] = .capped
                default: Issue.record("unexpected \(decision)")
                }
            }
        }
        let sent = decisions.compactMap { if case .send(let slot, _, _) = $0 { slot.target } else { nil } }
        let capped = decisions.compactMap { if case .capped(let slot, _, _) = $0 { slot.target } else { nil } }
        #expect(sent == [0, 1, 2, 3], "the first \(HouseholdCascade.sendsPerOccurrence) targets")
        #expect(capped == [4, 5])
        // One fewer target: every one is sent (the boundary's other side).
        let four = KnownOccurrence(key: key, label: "Wake", time: "05:00", targets: Array(phones.prefix(4)), heldAt: at(-60))
        var fourDone: [SlotKey: SlotOutcome] = [:]
        var fourSent = 0
        for minute in stride(from: 2.0, through: 8, by: 2) {
            for case .send(let slot, _, _) in HouseholdCascade.decide(view("jen-laptop", done: fourDone, online: ["jen-laptop"], occurrence: four),
                                                                      now: at(minute)).decisions {
                fourDone[slot] = .sent
                fourSent += 1
            }
        }
        #expect(fourSent == 4)
    }

    @Test("#51 finding 9: a survivor sends (or claims) at most sendsPerOwnerHour for one owner's occurrences within an hour; another owner, or an hour later, is not held back")
    func capPerOwnerHour() {
        let push = BackupTarget.push("https://ntfy.sh/jen")
        func plan(_ owner: String, _ alarm: Int, _ minutes: Double) -> KnownOccurrence {
            KnownOccurrence(key: OccurrenceKey(owner: owner, alarmID: alarm, at: Self.t + Int64(minutes * 60)), label: "Wake", time: "05:00",
                            targets: [push], heldAt: at(-60))
        }
        // Eight plans of the gone garage at T (a flood of forged plans, one push each), one of jen-laptop, one of garage 70 min later.
        let occurrences = (1...8).map { plan("garage", $0, 0) } + [plan("jen-laptop", 1, 0), plan("garage", 9, 70)]
        func decide(_ done: [SlotKey: SlotOutcome], _ minutes: Double) -> [HouseholdCascade.Decision] {
            HouseholdCascade.decide(HouseholdCascade.View(me: "kitchen", occurrences: occurrences, answers: [], done: done, claims: [:],
                                                          online: ["kitchen"], departed: ["garage": at(-30), "jen-laptop": at(-30)],
                                                          callable: []), now: at(minutes)).decisions
        }
        var done: [SlotKey: SlotOutcome] = [:]
        var claimed: [SlotKey] = []
        var capped: [SlotKey] = []
        for minutes in [2.1, 72.1] {
            for decision in decide(done, minutes) {
                switch decision {
                case .claim(let slot): done[slot] = .claimed; claimed.append(slot)
                case .capped(let slot, _, _): done[slot] = .capped; capped.append(slot)
                case .missed(let slot): done[slot] = .missed  // "All backups tried" of the early ones, an hour on
                default: Issue.record("unexpected \(decision)")
                }
            }
        }
        #expect(claimed.filter { $0.occurrence.owner == "garage" && $0.occurrence.alarmID <= 8 }.count == HouseholdCascade.sendsPerOwnerHour)
        #expect(capped.count == 8 - HouseholdCascade.sendsPerOwnerHour && capped.allSatisfy { $0.occurrence.owner == "garage" })
        #expect(claimed.contains { $0.occurrence.owner == "jen-laptop" }, "another owner is counted apart")
        #expect(claimed.contains { $0.occurrence.alarmID == 9 }, "70 minutes later the hour has passed")
        // Capped stays capped: nothing more is decided for those slots.
        #expect(decide(done, 72.2).isEmpty)
    }

    @Test("#51 finding 8: a peer's clock is measured from two live heartbeats in a row; a retained old one, or clocks within 30 s, measure nothing")
    func peerClocks() {
        var peers = HouseholdPeers()
        let me = at(-10)
        // A retained heartbeat from an hour ago, then live ones from a device 10 minutes fast.
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) - 3600), at: me)
        #expect(peers.clockOffsets.isEmpty)
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) + 600), at: me.addingTimeInterval(1))
        #expect(peers.clockOffsets.isEmpty, "an hour's gap in the dates against a second between arrivals: not a live pair")
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) + 660), at: me.addingTimeInterval(61))
        #expect(peers.clockOffsets == ["bedroom-pi": 599])
        // A heartbeat delivered at once measures it better; one delivered slowly does not make it worse.
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) + 720), at: me.addingTimeInterval(120))
        #expect(peers.clockOffsets == ["bedroom-pi": 600])
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) + 780), at: me.addingTimeInterval(182))
        #expect(peers.clockOffsets == ["bedroom-pi": 600], "a late delivery looks like a slower clock")
        // Its clock was set back 5 minutes: the new measure replaces the old.
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) + 540), at: me.addingTimeInterval(240))
        #expect(peers.clockOffsets == ["bedroom-pi": 600], "dates going backwards are not a live pair: the last measure stands")
        peers.heard("bedroom-pi", PeerMessage(online: Int64(me.timeIntervalSince1970) + 600), at: me.addingTimeInterval(300))
        #expect(peers.clockOffsets == ["bedroom-pi": 300])
        // A device 30 s off counts as the same clock; 31 s does not.
        peers.heard("kitchen", PeerMessage(online: Int64(me.timeIntervalSince1970) + 30), at: me)
        peers.heard("kitchen", PeerMessage(online: Int64(me.timeIntervalSince1970) + 90), at: me.addingTimeInterval(60))
        #expect(peers.clockOffsets["kitchen"] == nil && peers.byDevice["kitchen"]?.clockOffset == 30)
        peers.heard("kitchen", PeerMessage(online: Int64(me.timeIntervalSince1970) + 151), at: me.addingTimeInterval(120))
        #expect(peers.clockOffsets["kitchen"] == 31)
        // Its last will keeps what was measured.
        peers.heard("bedroom-pi", .offline, at: me.addingTimeInterval(310))
        #expect(peers.clockOffsets["bedroom-pi"] == 300)
    }

    @Test("#51 finding 8: a backup 10 minutes fast is judged on this clock: its Stop after its ring counts (dated ahead, kept on this clock), a Stop before it does not")
    func skewedAnswers() {
        let bedroomFast: [String: TimeInterval] = ["bedroom-pi": 600]
        // bedroom-pi rang at T+2 (real); it pressed Stop at T+3, dated T+13 by its clock, heard at T+3.
        let stop = CascadeAnswer(key: key, kind: .stop, target: nil, at: Self.t + 13 * 60, by: "bedroom-pi")
        #expect(HouseholdInbox.judge(stop, of: occurrence, receivedAt: at(3)) == .beforeTheRing, "without its clock: dated ahead of when heard")
        #expect(HouseholdInbox.judge(stop, of: occurrence, receivedAt: at(3), clockOffsets: bedroomFast) == .accepted)
        let local = HouseholdInbox.onThisClock(stop, clockOffsets: bedroomFast)
        #expect(local.at == Self.t + 3 * 60)
        #expect(HouseholdCascade.progress(of: occurrence, answers: [local], now: at(3)).finished, "the Stop counts now, not at T+13")
        // Before its ring (T+1 real, dated T+11 by its clock): forged, whatever its clock.
        let early = CascadeAnswer(key: key, kind: .stop, target: nil, at: Self.t + 11 * 60, by: "bedroom-pi")
        #expect(HouseholdInbox.judge(early, of: occurrence, receivedAt: at(1), clockOffsets: bedroomFast) == .beforeTheRing)
        // A device 10 minutes slow: its Stop after its ring is dated before the occurrence by its clock, and counts.
        let slow = CascadeAnswer(key: key, kind: .stop, target: nil, at: Self.t - 7 * 60, by: "bedroom-pi")
        #expect(HouseholdInbox.judge(slow, of: occurrence, receivedAt: at(3), clockOffsets: ["bedroom-pi": -600]) == .accepted)
        #expect(HouseholdInbox.judge(slow, of: occurrence, receivedAt: at(3)) == .beforeTheRing)
    }

    @Test("#51 finding 8: a backup whose clock is 10 minutes fast rings its slot at the owner's T+2, not 8 minutes early")
    func fastBackupRingsOnTime() {
        let online: Set = ["jen-laptop", "bedroom-pi"]
        // bedroom-pi's own clock reads 10 minutes more than the owner's: the owner's clock is 600 s behind it.
        let mine = { (real: Double) in self.at(real + 10) }
        let v = HouseholdCascade.View(me: "bedroom-pi", occurrences: [occurrence], answers: [], done: [:], claims: [:], online: online,
                                      clockOffsets: ["jen-laptop": -600])
        #expect(HouseholdCascade.decide(v, now: mine(1.99)).decisions == [], "not at the owner's T+1:59")
        #expect(HouseholdCascade.decide(v, now: mine(1.99)).wakeAt == mine(2), "it wakes at the owner's T+2, on its own clock")
        #expect(HouseholdCascade.decide(v, now: mine(2)).decisions == [.ring(slot(0, 2), occurrence, round: 0)], "the slot keeps the owner's time")
        // Without the offset it would ring at its own T+2: the owner's T-8.
        let blind = HouseholdCascade.View(me: "bedroom-pi", occurrences: [occurrence], answers: [], done: [:], claims: [:], online: online)
        #expect(HouseholdCascade.decide(blind, now: at(2)).decisions == [.ring(slot(0, 2), occurrence, round: 0)])
    }

    @Test("the owner sends its push and call targets itself while alive; survivors leave them alone")
    func ownerSends() {
        let online: Set = ["jen-laptop", "bedroom-pi", "kitchen"]
        let done: [SlotKey: SlotOutcome] = [:]
        #expect(HouseholdCascade.decide(view("jen-laptop", done: done, online: online), now: at(4)).decisions
                == [.send(slot(1, 4), occurrence, .push("https://ntfy.sh/jen"))])
        #expect(HouseholdCascade.decide(view("kitchen", online: online), now: at(7)).decisions == [])
        // Without a broker the owner sees nobody online, itself included: it still sends.
        #expect(HouseholdCascade.decide(view("jen-laptop", done: [slot(1, 4): .sent], online: []), now: at(6)).decisions
                == [.send(slot(2, 6), occurrence, .phone("+15551234567"))])
    }

    @Test("a dead owner: the first survivor by name claims 3 s after the slot, the next 5 s later; a claim wins after 2 s settled")
    func survivorsClaim() {
        let online: Set = ["bedroom-pi", "kitchen"]
        let push = slot(1, 4)
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: [slot(0, 2): .rang], online: online), now: at(4)).wakeAt
                == at(4).addingTimeInterval(3))
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: [slot(0, 2): .rang], online: online), now: at(4).addingTimeInterval(3)).decisions
                == [.claim(push)])
        #expect(HouseholdCascade.decide(view("kitchen", online: online), now: at(4).addingTimeInterval(7.9)).decisions == [])
        #expect(HouseholdCascade.decide(view("kitchen", online: online), now: at(4).addingTimeInterval(8)).decisions == [.claim(push)])
        // bedroom-pi's claim seen by kitchen: it stands down.
        let claim = SlotClaim(by: "bedroom-pi", at: push.at + 3, state: .claimed)
        #expect(HouseholdCascade.decide(view("kitchen", claims: [push: claim], online: online), now: at(4).addingTimeInterval(8)).decisions == [])
        // bedroom-pi sends once its claim settled (1.9 s: not yet).
        let mine = view("bedroom-pi", done: [slot(0, 2): .rang, push: .claimed], claims: [push: claim], online: online)
        #expect(HouseholdCascade.decide(mine, now: at(4).addingTimeInterval(4.9)).decisions == [])
        #expect(HouseholdCascade.decide(mine, now: at(4).addingTimeInterval(5)).decisions == [.send(push, occurrence, .push("https://ntfy.sh/jen"))])
        // Overwritten by kitchen's claim (the latest wins): bedroom-pi never sends.
        let theirs = SlotClaim(by: "kitchen", at: push.at + 4, state: .claimed)
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: [slot(0, 2): .rang, push: .claimed], claims: [push: theirs], online: online),
                                        now: at(5)).decisions == [])
        // A claim in our name that we have no record of (our database was lost) is not trusted to send.
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: [slot(0, 2): .rang], claims: [push: claim], online: online), now: at(5)).decisions == [])
    }

    @Test("Snooze on a backup: the same target 9 minutes later, in a new slot; the escalation waits")
    func snooze() {
        let snooze = CascadeAnswer(key: key, kind: .snooze, target: 0, at: Self.t + 180, by: "bedroom-pi")
        let mine = view("bedroom-pi", answers: [snooze], done: [slot(0, 2): .rang], online: ["bedroom-pi"])
        #expect(HouseholdCascade.decide(mine, now: at(11.99)).decisions == [])
        #expect(HouseholdCascade.decide(mine, now: at(11.99)).wakeAt == at(12))
        #expect(HouseholdCascade.decide(mine, now: at(12)).decisions == [.ring(slot(0, 12), occurrence, round: 1)])
        #expect(HouseholdCascade.decide(mine, now: at(12)).wakeAt == at(14), "then the escalation goes on")
    }

    @Test("all backups tried: every agent with the plan announces it once, 2 minutes after the last target")
    func allTried() {
        let done: [SlotKey: SlotOutcome] = [slot(0, 2): .rang]
        let tried = SlotKey(occurrence: key, target: SlotKey.allTried, at: Self.t + 480)
        #expect(HouseholdCascade.decide(view("kitchen", online: ["jen-laptop"]), now: at(8)).decisions == [.allTried(tried, occurrence)])
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: done.merging([tried: .announced]) { a, _ in a }, online: ["jen-laptop"]),
                                        now: at(9)).decisions == [])
    }

    @Test("an agent that comes back past the late limit records slots as missed, never fires them late")
    func late() {
        let d = HouseholdCascade.decide(view("bedroom-pi", online: []), now: at(12.01)).decisions
        #expect(d.contains(.missed(slot(0, 2))))
        #expect(!d.contains { if case .ring = $0 { true } else { false } })
        // 10 minutes late exactly still rings.
        #expect(HouseholdCascade.decide(view("bedroom-pi", online: []), now: at(12)).decisions.first == .ring(slot(0, 2), occurrence, round: 0))
    }

    @Test("#25: a survivor sends only for an owner seen online then gone, from an occurrence held ahead of it and before the owner went")
    func survivorNeedsKnownOwnerAndPlanAhead() {
        let push = slot(1, 4)
        let claimAt = at(4).addingTimeInterval(3)
        func decisions(heldAt: Date?, departed: [String: Date]) -> [HouseholdCascade.Decision] {
            var occ = occurrence
            occ.heldAt = heldAt
            return HouseholdCascade.decide(view("bedroom-pi", done: [slot(0, 2): .rang], online: ["bedroom-pi"], occurrence: occ, departed: departed),
                                           now: claimAt).decisions
        }
        #expect(decisions(heldAt: at(-60), departed: ["jen-laptop": at(-30)]) == [.claim(push)])
        #expect(decisions(heldAt: at(-60), departed: [:]) == [], "an owner never seen online (or seen only offline)")
        #expect(decisions(heldAt: nil, departed: ["jen-laptop": at(-30)]) == [], "an occurrence held from no plan we know")
        #expect(decisions(heldAt: at(-29.99), departed: ["jen-laptop": at(-30)]) == [], "held after the owner went")
        #expect(decisions(heldAt: at(-30), departed: ["jen-laptop": at(-30)]) == [.claim(push)], "held as it went (the same instant)")
        #expect(decisions(heldAt: at(0), departed: ["jen-laptop": at(1)]) == [], "a plan heard once its occurrence had come")
        #expect(decisions(heldAt: at(-0.01), departed: ["jen-laptop": at(1)]) == [.claim(push)])
    }

    @Test("#25: a survivor calls only a number this device's owner allowed; the owner calls its own targets")
    func callsNeedConsent() {
        let call = slot(2, 6)
        let claimAt = at(6).addingTimeInterval(3)
        let done: [SlotKey: SlotOutcome] = [slot(0, 2): .rang, slot(1, 4): .sent]
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: done, online: ["bedroom-pi"]), now: claimAt).decisions == [.claim(call)])
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: done, online: ["bedroom-pi"], callable: ["+15551234568"]), now: claimAt).decisions == [])
        #expect(HouseholdCascade.decide(view("bedroom-pi", done: done, online: ["bedroom-pi"], callable: []), now: claimAt).decisions == [])
        #expect(HouseholdCascade.decide(view("jen-laptop", done: [slot(1, 4): .sent], online: [], callable: []), now: at(6)).decisions
                == [.send(call, occurrence, .phone("+15551234567"))])
    }

    @Test("#25: the earliest answer of each device: the owner at T, a device target at its first slot, anyone else never")
    func earliestAnswer() {
        #expect(occurrence.earliestAnswer(by: "jen-laptop") == at(0))
        #expect(occurrence.earliestAnswer(by: "bedroom-pi") == at(2))
        #expect(occurrence.earliestAnswer(by: "kitchen") == nil)
    }

    /// A household of three agents replaying random Stop/Snooze/silence/crash sequences: each slot is done
    /// by at most one agent and at most once, never after a Stop, and device slots fire in time order.
    @Test("property: each slot at most once, never after Stop, always one of the cascade's slots, in order (random answers, crashes, presence)")
    func property() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...3).array(of: 1...30), Gen.int(in: 1...240).array(of: 30...30),
                            Gen.int(in: 0...2).array(of: 30...30)) { kinds, steps, who in
            let agents = ["jen-laptop", "bedroom-pi", "kitchen"]
            let occ = KnownOccurrence(key: key, label: "Wake", time: "05:00",
                                      targets: [.device("bedroom-pi"), .device("kitchen"), .push("https://ntfy.sh/jen"), .phone("+15551234567")],
                                      heldAt: at(-60))
            var done: [String: [SlotKey: SlotOutcome]] = Dictionary(uniqueKeysWithValues: agents.map { ($0, [:]) })
            var claims: [SlotKey: SlotClaim] = [:]
            var answers: [CascadeAnswer] = []
            var fired: [(agent: String, slot: SlotKey, at: Date)] = []
            var alive: Set<String> = Set(agents)
            var now = at(0)
            for (index, kind) in kinds.enumerated() {
                now = now.addingTimeInterval(TimeInterval(steps[index]))
                let agent = agents[who[index]]
                switch kind {
                case 0: // Stop by someone alive.
                    if alive.contains(agent) { answers.append(CascadeAnswer(key: key, kind: .stop, target: nil, at: Int64(now.timeIntervalSince1970), by: agent)) }
                case 1: // Snooze of whatever rang last on that agent.
                    if let last = fired.last(where: { $0.agent == agent && $0.slot.target >= 0 }) {
                        answers.append(CascadeAnswer(key: key, kind: .snooze, target: last.slot.target, at: Int64(now.timeIntervalSince1970), by: agent))
                    }
                case 2: // A crash, or a return (its database survives).
                    if alive.contains(agent) { alive.remove(agent) } else { alive.insert(agent) }
                default: break
                }
                for me in agents where alive.contains(me) {
                    let v = HouseholdCascade.View(me: me, occurrences: [occ], answers: answers, done: done[me]!, claims: claims, online: alive,
                                                  departed: Dictionary(uniqueKeysWithValues: agents.map { ($0, at(-1)) }), callable: ["+15551234567"])
                    for decision in HouseholdCascade.decide(v, now: now).decisions {
                        switch decision {
                        case .ring(let slot, _, _):
                            done[me]![slot] = .rang
                            fired.append((me, slot, now))
                        case .send(let slot, _, _):
                            // The service publishes its claim (state sent) with every send, the owner's included.
                            done[me]![slot] = .sent
                            claims[slot] = SlotClaim(by: me, at: Int64(now.timeIntervalSince1970), state: .sent)
                            fired.append((me, slot, now))
                        case .claim(let slot):
                            done[me]![slot] = .claimed
                            claims[slot] = SlotClaim(by: me, at: Int64(now.timeIntervalSince1970), state: .claimed)
                        case .missed(let slot): done[me]![slot] = .missed
                        case .allTried(let slot, _): done[me]![slot] = .announced
                        case .capped(let slot, _, _): done[me]![slot] = .capped
                        }
                    }
                }
            }
            // However many snoozes fire the push and the call again, no agent sends or claims more than the cap.
            for agent in agents {
                let sends = done[agent]!.values.filter { [.sent, .claimed, .failed].contains($0) }.count
                #expect(sends <= HouseholdCascade.sendsPerOccurrence, "\(agent) sent \(sends): \(done[agent]!)")
            }
            let slots = fired.map(\.slot)
            #expect(Set(slots).count == slots.count, "a slot fired twice: \(fired)")
            if let stop = answers.filter({ $0.kind == .stop }).map(\.at).min() {
                #expect(fired.allSatisfy { $0.slot.at <= stop }, "fired after the Stop at \(stop): \(fired)")
            }
            // In order: each agent acts on its slots in their order, and the targets' first slots follow the list.
            for agent in agents {
                let mine = fired.filter { $0.agent == agent }.map(\.slot.at)
                #expect(mine == mine.sorted(), "\(agent) acted out of order: \(fired)")
            }
            // ... and every slot fired is one of the cascade's own slots, in its order (escalating every 2 minutes
            // down the list, a snoozed target again 9 minutes later), replayed from the whole history.
            let planned = HouseholdCascade.progress(of: occ, answers: answers, now: now).slots.map(\.key)
            #expect(fired.allSatisfy { f in planned.contains(f.slot) }, "a slot outside the cascade: \(fired) planned \(planned)")
            #expect(planned.map(\.at) == planned.map(\.at).sorted())
        }
    }
}

@Suite("Household messages from the broker (#12): topics, payloads, hostile input")
struct HouseholdMessageTests {
    let household = HouseholdTopic.slug("Jen's family")

    @Test("the household's topic level: ASCII slug, a stable fallback, home when unnamed")
    func slug() {
        #expect(household == "jen-s-family")
        #expect(HouseholdTopic.slug(nil) == "home")
        #expect(HouseholdTopic.slug("Ω家") == "hcea9e5aeb6")
        #expect(HouseholdTopic.slug("a/+#b") == "a-b")
    }

    @Test("topics round-trip")
    func topics() throws {
        let key = OccurrenceKey(owner: "jen-laptop", alarmID: 3, at: 1_800_000_000)
        for topic in [HouseholdTopic.peer(device: "bedroom-pi"), .plan(owner: "jen-laptop", alarmID: 3), .answer(key, kind: .stop, by: "bedroom-pi"),
                      .answer(key, kind: .snooze, by: "jen-laptop"), .claim(SlotKey(occurrence: key, target: 2, at: 1_800_000_360))] {
            #expect(try HouseholdTopic(parsing: topic.topic(household: household), household: household) == topic)
        }
    }

    @Test("a plan parses; hostile plans are refused with a reason")
    func plans() throws {
        let topic = HouseholdTopic.plan(owner: "jen-laptop", alarmID: 3).topic(household: household)
        let good = HouseholdMessage.encode(PlanMessage(label: "Wake", time: "05:00", occurrences: [1_800_000_000],
                                                       targets: [.device("bedroom-pi"), .phone("+15551234567")]))
        guard case .plan(let owner, 3, let plan?) = try HouseholdMessage.parse(topic: topic, payload: good, household: household) else {
            Issue.record("not a plan")
            return
        }
        #expect(owner == "jen-laptop" && plan.targets == [.device("bedroom-pi"), .phone("+15551234567")])
        #expect(try HouseholdMessage.parse(topic: topic, payload: [], household: household) == .plan(owner: "jen-laptop", alarmID: 3, nil))
        let hostile: [(String, String)] = [
            ("{", "not the expected JSON"),
            (#"{"v":2,"label":"x","time":"05:00","occurrences":[1800000000],"targets":["device:a"]}"#, "version 2"),
            (#"{"v":1,"label":"x","time":"25:00","occurrences":[1800000000],"targets":["device:a"]}"#, "HH:MM"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[1e300],"targets":["device:a"]}"#, "JSON"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[-5],"targets":["device:a"]}"#, "2000 and 2200"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[1800000000],"targets":[]}"#, "no targets"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[1800000000],"targets":["device:jen-laptop"]}"#, "its owner"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[1800000000],"targets":["device:a","device:a"]}"#, "twice"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[1800000000],"targets":["device:bеdroom"]}"#, "not valid"),
            (#"{"v":1,"label":"x","time":"05:00","occurrences":[1800000000],"targets":["push:javascript:alert(1)"]}"#, "not valid"),
        ]
        for (payload, reason) in hostile {
            #expect {
                _ = try HouseholdMessage.parse(topic: topic, payload: Array(payload.utf8), household: household)
            } throws: { ($0 as? HouseholdMessageError)?.description.contains(reason) == true }
        }
        #expect(throws: HouseholdMessageError.self) {
            _ = try HouseholdMessage.parse(topic: topic, payload: Array(repeating: 0x20, count: 16 * 1024 + 1), household: household)
        }
    }

    @Test("#25: a plan carries push URLs without their user, password, query or fragment; tokens go to their server only")
    func pushSecrets() throws {
        let secret = try BackupTarget(parsing: "push:https://jen:tk_abc@ntfy.example.org:8443/jen-7f?auth=tk_xyz#frag")
        #expect(secret.published == .push("https://ntfy.example.org:8443/jen-7f"))
        #expect(BackupTarget.push("https://ntfy.sh/jen").published == .push("https://ntfy.sh/jen"))
        #expect(BackupTarget.phone("+15551234567").published == .phone("+15551234567"))
        let plan = PlanMessage(label: "Wake", time: "05:00", occurrences: [1_800_000_000], targets: [secret])
        #expect(plan.targets == ["push:https://ntfy.example.org:8443/jen-7f"])
        #expect(BackupTarget.sameOrigin("https://ntfy.sh/jen", "https://ntfy.sh"))
        #expect(BackupTarget.sameOrigin("https://NTFY.sh:443/jen", "https://ntfy.sh/"))
        #expect(!BackupTarget.sameOrigin("http://ntfy.sh/jen", "https://ntfy.sh"), "not downgraded to plain http")
        #expect(!BackupTarget.sameOrigin("https://ntfy.sh.attacker.example/jen", "https://ntfy.sh"))
        #expect(!BackupTarget.sameOrigin("https://ntfy.sh:8443/jen", "https://ntfy.sh"))
        #expect(!BackupTarget.sameOrigin("https://attacker.example/ntfy.sh", "https://ntfy.sh"))
    }

    @Test("topics of another household, unknown kinds, look-alike names, bad numbers are refused")
    func badTopics() {
        for topic in ["dosetap/other/peer/a", "dosetap/jen-s-family/peer/bеdroom", "dosetap/jen-s-family/peer/a/b", "dosetap/jen-s-family/dose/a",
                      "dosetap/jen-s-family/answer/b/a/3/1800000000/maybe", "dosetap/jen-s-family/answer/b/a/3/-1/stop",
                      "dosetap/jen-s-family/answer/b/a/3/99999999999/stop", "dosetap/jen-s-family/answer/a/3/1800000000/stop",
                      "dosetap/jen-s-family/answer/../a/3/1800000000/stop", "dosetap/jen-s-family/claim/a/3/1800000000/40/1800000000",
                      "dosetap/jen-s-family/plan/a/x", "dosetap/jen-s-family/peer/a\u{7}"] {
            #expect(throws: HouseholdMessageError.self, "\(topic)") { _ = try HouseholdTopic(parsing: topic, household: household) }
        }
    }

    @Test("answers: from the device of their topic (#25), a target in range; one dated before its occurrence is judged on this clock")
    func answers() throws {
        let key = OccurrenceKey(owner: "jen-laptop", alarmID: 3, at: 1_800_000_000)
        let topic = HouseholdTopic.answer(key, kind: .snooze, by: "bedroom-pi").topic(household: household)
        #expect(topic == "dosetap/jen-s-family/answer/bedroom-pi/jen-laptop/3/1800000000/snooze")
        #expect(try HouseholdMessage.parse(topic: topic, payload: Array(#"{"by":"bedroom-pi","at":1800000200,"target":0}"#.utf8), household: household)
                == .answer(CascadeAnswer(key: key, kind: .snooze, target: 0, at: 1_800_000_200, by: "bedroom-pi")))
        #expect {
            _ = try HouseholdMessage.parse(topic: topic, payload: Array(#"{"by":"jen-laptop","at":1800000200}"#.utf8), household: household)
        } throws: { ($0 as? HouseholdMessageError)?.description.contains("not the device of its topic") == true }
        // Dated before its occurrence: parsed (the sender's clock may be behind the owner's), and judged on this clock:
        // forged where the clocks agree, as the Stop of a device 10 minutes slow where it is.
        let early = try HouseholdMessage.parse(topic: topic, payload: Array(#"{"by":"bedroom-pi","at":1799999999}"#.utf8), household: household)
        guard case .answer(let answer) = early else { Issue.record("\(early)"); return }
        let occurrence = KnownOccurrence(key: key, label: "Wake", time: "05:00", targets: [.device("bedroom-pi")])
        let heard = Date(timeIntervalSince1970: 1_800_000_600)
        #expect(HouseholdInbox.judge(answer, of: occurrence, receivedAt: heard) == .beforeTheRing)
        #expect(HouseholdInbox.judge(answer, of: occurrence, receivedAt: heard, clockOffsets: ["bedroom-pi": -600]) == .accepted)
        for payload in [#"{"by":"../x","at":1800000200}"#, #"{"by":"bedroom-pi","at":1800000200,"target":99}"#,
                        #"{"by":"bedroom-pi","at":"now"}"#, #"{"at":1800000200}"#, #"{"by":"kitchen","at":1800000200}"#] {
            #expect(throws: HouseholdMessageError.self, "\(payload)") {
                _ = try HouseholdMessage.parse(topic: topic, payload: Array(payload.utf8), household: household)
            }
        }
    }
}
