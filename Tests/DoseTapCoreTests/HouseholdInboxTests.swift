import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// The household's rules for what arrives from the broker, and the plans an owner publishes (pure parts of
/// `HouseholdService`, #26).
@Suite("The household inbox and planner: peers, believed answers, waiting messages, published plans")
struct HouseholdInboxTests {
    static let t: Int64 = 1_800_000_000
    let key = OccurrenceKey(owner: "jen-laptop", alarmID: 3, at: HouseholdInboxTests.t)
    var occurrence: KnownOccurrence {
        KnownOccurrence(key: key, label: "Wake", time: "05:00", targets: [.device("bedroom-pi"), .device("kitchen"), .push("https://ntfy.sh/jen")])
    }
    func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: TimeInterval(Self.t) + seconds) }
    func answer(_ kind: CascadeAnswer.Kind = .stop, by: String, dated: Double, target: Int? = nil) -> CascadeAnswer {
        CascadeAnswer(key: key, kind: kind, target: target, at: Self.t + Int64(dated), by: by)
    }

    @Test("a peer online, then its last will: departed at that moment; back online: not departed; a device only ever offline never departed")
    func peerLifecycle() {
        var peers = HouseholdPeers()
        do { let changed = peers.heard("kitchen", PeerMessage(online: Self.t), at: at(0)); #expect(changed) }
        do { let changed = peers.heard("kitchen", PeerMessage(online: Self.t + 60), at: at(60)); #expect(!changed, "a heartbeat changes nothing of its state") }
        #expect(peers.byDevice["kitchen"]?.heartbeat == at(60))
        #expect(peers.online == ["kitchen"] && peers.departed.isEmpty)
        do { let changed = peers.heard("kitchen", .offline, at: at(90)); #expect(changed) }
        #expect(peers.departed == ["kitchen": at(90)] && peers.online.isEmpty)
        #expect(peers.byDevice["kitchen"]?.heartbeat == at(60), "the last heartbeat is kept")
        do { let changed = peers.heard("kitchen", .offline, at: at(120)); #expect(!changed) }
        #expect(peers.departed == ["kitchen": at(90)], "a second offline keeps the first departure")
        do { let changed = peers.heard("kitchen", PeerMessage(online: Self.t + 200), at: at(200)); #expect(changed) }
        #expect(peers.departed.isEmpty)
        peers.heard("ghost", .offline, at: at(210))
        #expect(peers.knows("ghost") && peers.departed["ghost"] == nil)
    }

    @Test("bounded: beyond capacity an offline never-departed device goes first, then the oldest online, a departed one last")
    func peersBounded() {
        var peers = HouseholdPeers(capacity: 3)
        peers.heard("owner", PeerMessage(online: Self.t), at: at(0))
        peers.heard("owner", .offline, at: at(1))
        peers.heard("kitchen", PeerMessage(online: Self.t), at: at(2))
        peers.heard("stranger", .offline, at: at(3))
        peers.heard("new-1", PeerMessage(online: Self.t), at: at(4))
        #expect(Set(peers.byDevice.keys) == ["owner", "kitchen", "new-1"], "the offline stranger went")
        peers.heard("new-2", PeerMessage(online: Self.t), at: at(5))
        #expect(Set(peers.byDevice.keys) == ["owner", "new-1", "new-2"], "then the online device heard from longest ago")
        #expect(peers.departed == ["owner": at(1)])
        peers.heard("new-1", PeerMessage(online: Self.t), at: at(6))
        #expect(peers.count == 3, "a known device is not a new key")
    }

    @Test("property: a flood of devices never holds more than capacity, and a departed owner outlives any flood of online strangers")
    func peersProperty() async {
        await propertyCheck(count: 200, input: Gen.int(in: 1...40), Gen.int(in: 0...200)) { capacity, flood in
            var peers = HouseholdPeers(capacity: capacity + 1)
            peers.heard("owner", PeerMessage(online: Self.t), at: at(0))
            peers.heard("owner", .offline, at: at(1))
            for i in 0..<flood { peers.heard("d\(i)", PeerMessage(online: Self.t), at: at(Double(2 + i))) }
            #expect(peers.count <= capacity + 1)
            #expect(peers.departed["owner"] == at(1))
        }
    }

    @Test("answers: the owner from its ring, a device target from its slot (10 s of skew either side); others never")
    func answerBounds() {
        // The owner's ring is T; bedroom-pi's slot is T+2 min, kitchen's T+4 min.
        #expect(HouseholdInbox.judge(answer(by: "jen-laptop", dated: 0), of: occurrence, receivedAt: at(0)) == .accepted)
        #expect(HouseholdInbox.judge(answer(by: "jen-laptop", dated: -10), of: occurrence, receivedAt: at(-10)) == .accepted)
        #expect(HouseholdInbox.judge(answer(by: "jen-laptop", dated: -11), of: occurrence, receivedAt: at(0)) == .beforeTheRing)
        #expect(HouseholdInbox.judge(answer(by: "jen-laptop", dated: 0), of: occurrence, receivedAt: at(-11)) == .beforeTheRing, "heard before it could ring")
        #expect(HouseholdInbox.judge(answer(by: "jen-laptop", dated: 70), of: occurrence, receivedAt: at(60)) == .accepted)
        #expect(HouseholdInbox.judge(answer(by: "jen-laptop", dated: 71), of: occurrence, receivedAt: at(60)) == .beforeTheRing, "dated ahead of its arrival")
        #expect(HouseholdInbox.judge(answer(by: "bedroom-pi", dated: 110), of: occurrence, receivedAt: at(110)) == .accepted)
        #expect(HouseholdInbox.judge(answer(by: "bedroom-pi", dated: 109), of: occurrence, receivedAt: at(110)) == .beforeTheRing)
        #expect(HouseholdInbox.judge(answer(by: "kitchen", dated: 200), of: occurrence, receivedAt: at(200)) == .beforeTheRing)
        #expect(HouseholdInbox.judge(answer(by: "kitchen", dated: 230), of: occurrence, receivedAt: at(230)) == .accepted)
        #expect(HouseholdInbox.judge(answer(by: "mallory", dated: 600), of: occurrence, receivedAt: at(600)) == .notAnAnswerer)
        #expect(HouseholdInbox.judge(answer(by: "jen-1aptop", dated: 600), of: occurrence, receivedAt: at(600)) == .notAnAnswerer, "a look-alike name")
    }

    @Test("a snooze names a backup of the plan (0…count−1) or the primary (nil); any other index is refused")
    func snoozeTarget() {
        for (target, verdict) in [(nil, HouseholdInbox.AnswerVerdict.accepted), (0, .accepted), (2, .accepted), (3, .unknownTarget), (-1, .unknownTarget)] as [(Int?, HouseholdInbox.AnswerVerdict)] {
            #expect(HouseholdInbox.judge(answer(.snooze, by: "bedroom-pi", dated: 200, target: target), of: occurrence, receivedAt: at(200)) == verdict,
                    "target \(String(describing: target))")
        }
    }

    @Test("members: the owner, its device targets, and devices heard on the household's topics; a push target's host is not one")
    func members() {
        var peers = HouseholdPeers()
        #expect(HouseholdInbox.isMember("jen-laptop", of: occurrence, peers: peers))
        #expect(HouseholdInbox.isMember("kitchen", of: occurrence, peers: peers))
        #expect(!HouseholdInbox.isMember("garage", of: occurrence, peers: peers))
        #expect(!HouseholdInbox.isMember("ntfy.sh", of: occurrence, peers: peers))
        peers.heard("garage", PeerMessage(online: Self.t), at: at(0))
        #expect(HouseholdInbox.isMember("garage", of: occurrence, peers: peers))
    }

    @Test("waiting messages: kept up to 60 s (not a second more), at most capacity, the oldest dropped first")
    func pending() {
        var pending = HouseholdPending<String>(capacity: 3)
        #expect(pending.nextExpiry == nil)
        for (i, text) in ["a", "b", "c", "d"].enumerated() { pending.keep(text, receivedAt: at(Double(i)), reason: "why") }
        #expect(pending.items.map(\.message) == ["b", "c", "d"])
        #expect(pending.nextExpiry == at(61))
        let (waiting, expired) = pending.takeAll(at: at(61))
        #expect(waiting.map(\.message) == ["c", "d"] && expired.map(\.message) == ["b"])
        #expect(pending.items.isEmpty)
    }

    @Test("plans: an alarm with backups on plans its occurrences within eight days (at most 16); off, no targets or no alarm: none")
    func plans() throws {
        let utc = TimeZone(identifier: "UTC")!
        let now = Date(timeIntervalSince1970: 1_772_420_400)   // 2026-03-02 03:00 UTC
        let time = try TimeOfDay(hour: 5, minute: 0)
        let daily = try Alarm(id: 1, time: time, label: "Wake", repetition: .daily)
        let weekdays = try Alarm(id: 2, time: time, repetition: .days([.mon]))
        let once = try Alarm(id: 3, time: time, repetition: .once)
        let off = try Alarm(id: 4, time: time, repetition: .daily, enabled: false)
        let targets: [BackupTarget] = [.device("bedroom-pi"), .push("https://user:pw@ntfy.sh/jen?auth=x")]
        let plans = HouseholdPlanner.plans([
            .init(alarm: daily, targets: targets, latestRing: nil), .init(alarm: weekdays, targets: targets, latestRing: nil),
            .init(alarm: once, targets: targets, latestRing: .stopped), .init(alarm: off, targets: targets, latestRing: nil),
            .init(alarm: try Alarm(id: 5, time: time, repetition: .daily), targets: [], latestRing: nil),
        ], now: now, timeZone: utc)
        #expect(Set(plans.keys) == [1, 2, 3])
        let first = Int64(now.timeIntervalSince1970) + 2 * 3600
        #expect(plans[1]?.message.occurrences == (0..<8).map { first + Int64($0) * 86_400 }, "eight days of a daily alarm")
        #expect(plans[2]?.message.occurrences == [first, first + 7 * 86_400])
        #expect(plans[3]?.message.occurrences == [first])
        #expect(plans[1]?.message.targets == ["device:bedroom-pi", "push:https://ntfy.sh/jen"], "published without the URL's secrets")
        #expect(plans[1]?.known.targets == targets, "kept with them")
        #expect(plans[1]?.message.time == "05:00" && plans[1]?.message.label == "Wake")
        for outcome in [AlarmRingOutcome.ringing, .snoozed] {
            #expect(HouseholdPlanner.plans([.init(alarm: once, targets: targets, latestRing: outcome)], now: now, timeZone: utc).isEmpty,
                    "a once alarm under way (\(outcome)) plans no new occurrence")
        }
    }
}
