import DoseTapAgent
import DoseTapApp
import Foundation
import Testing

@Suite("household status: what the agent recorded, as text")
struct HouseholdStatusTests {
    func lines(_ json: String) throws -> [String] {
        try JSONDecoder().decode(HouseholdStatus.self, from: Data(json.utf8)).lines(timeZone: TimeZone(identifier: "UTC")!)
    }

    /// #26: the agent built the file from loose JSON and the command line decoded a separate type; now one type.
    @Test("what the agent writes is what the command line reads: every shape of broker round-trips through the one type")
    func roundTrip() throws {
        let peers = [HouseholdStatus.Peer(device: "jen-laptop", online: false, lastHeartbeat: nil),
                     HouseholdStatus.Peer(device: "kitchen", online: true, lastHeartbeat: "2026-11-24T04:59:00Z")]
        let cascade = HouseholdStatus.Cascade(owner: "jen-laptop", alarm: 1, label: "Wake", time: "05:00", occurrence: "2026-11-24T05:00:00Z",
                                              next: nil, fired: [.init(target: "push:https://ntfy.sh/x", at: "2026-11-24T05:02:00Z", done: nil)])
        let brokers = [
            HouseholdStatus.Broker(configured: false),
            HouseholdStatus.Broker(configured: true, url: "mqtts://pi:8883", connected: false, off: "mqtt.password_file: unreadable"),
            HouseholdStatus.Broker(configured: true, url: "mqtts://pi:8883", connected: true, since: "2026-11-24T05:01:00Z", anonymous: false),
            HouseholdStatus.Broker(configured: true, url: "mqtt://127.0.0.1:1883", connected: false, since: nil, anonymous: true),
        ]
        for broker in brokers {
            let written = HouseholdStatus(pid: 42, device: "bedroom-pi", household: nil, topic: "dosetap/home", broker: broker,
                                          peers: peers, cascades: [cascade])
            let read = try JSONDecoder().decode(HouseholdStatus.self, from: Data(written.json.text.utf8))
            #expect(read == written)
        }
        // Unknown values are written as null, not left out (scripts read the keys).
        let text = HouseholdStatus(pid: 1, device: "d", household: nil, topic: "t", broker: brokers[3], peers: peers, cascades: [cascade]).json.text
        #expect(text.contains(#""household":null"#) && text.contains(#""since":null"#) && text.contains(#""lastHeartbeat":null"#)
                && text.contains(#""next":null"#) && text.contains(#""done":null"#), "\(text)")
    }

    @Test("a connected broker, peers with their heartbeat, a cascade with its slots; device text escaped")
    func connected() throws {
        let out = try lines("""
            {"pid":1,"device":"bedroom-pi","household":"Jen's family","topic":"dosetap/jen-s-family",
             "broker":{"configured":true,"url":"mqtt://pi.local:1883","connected":true,"since":"2026-11-24T05:01:00Z"},
             "peers":[{"device":"jen-laptop","online":false,"lastHeartbeat":"2026-11-24T04:59:00Z"}],
             "cascades":[{"owner":"jen-laptop","alarm":1,"label":"Wake\\u001b[31m","time":"05:00","occurrence":"2026-11-24T05:00:00Z",
                          "next":"2026-11-24T05:04:00Z","fired":[{"target":"device:bedroom-pi","at":"2026-11-24T05:02:00Z","done":"rang"}]}]}
            """)
        #expect(out[1] == "Broker: mqtt://pi.local:1883 — connected since 2026-11-24 05:01:00")
        #expect(out.contains { $0.contains("jen-laptop") && $0.contains("offline") && $0.contains("2026-11-24 04:59:00") })
        #expect(out.contains("  jen-laptop alarm 1 \"Wake\\x1b[31m\" at 05:00 — next 2026-11-24 05:04:00"))
        #expect(out.contains("    2026-11-24 05:02:00 device:bedroom-pi (rang here)"))
    }

    @Test("#51 finding 8: a peer whose clock is off says by how much and that its times are read on this clock; one within 30 s, or an older agent's file, says nothing")
    func clocks() throws {
        let peers = [HouseholdStatus.Peer(device: "bedroom-pi", online: true, lastHeartbeat: "2026-11-24T05:09:00Z", clockOffset: 600),
                     HouseholdStatus.Peer(device: "kitchen", online: true, lastHeartbeat: "2026-11-24T04:58:15Z", clockOffset: -45),
                     HouseholdStatus.Peer(device: "study", online: true, lastHeartbeat: "2026-11-24T04:59:00Z")]
        let written = HouseholdStatus(pid: 1, device: "jen-laptop", household: nil, topic: "dosetap/home",
                                      broker: .init(configured: true, url: "mqtts://pi:8883", connected: true, since: "2026-11-24T05:01:00Z", anonymous: false),
                                      peers: peers, cascades: [])
        #expect(try JSONDecoder().decode(HouseholdStatus.self, from: Data(written.json.text.utf8)) == written)
        #expect(written.json.text.contains(#""clockOffset":600"#) && written.json.text.contains(#""clockOffset":null"#))
        let out = written.lines(timeZone: TimeZone(identifier: "UTC")!)
        #expect(out.contains { $0.hasPrefix("  bedroom-pi") && $0.hasSuffix(" — clock 10 min ahead of this one's: its slots and answers are read on this clock") })
        #expect(out.contains { $0.hasPrefix("  kitchen") && $0.hasSuffix(" — clock 45 s behind this one's: its slots and answers are read on this clock") })
        #expect(out.contains { $0.hasPrefix("  study") && !$0.contains("clock") })
        let older = try lines("""
            {"pid":1,"device":"vm","household":null,"topic":"dosetap/home","broker":{"configured":false},
             "peers":[{"device":"kitchen","online":true,"lastHeartbeat":"2026-11-24T04:59:00Z"}],"cascades":[]}
            """)
        #expect(older.contains { $0.hasPrefix("  kitchen") && !$0.contains("clock") })
    }

    @Test("a broker refused by a security setting says so; none configured says what works without one")
    func offAndNone() throws {
        let off = try lines("""
            {"pid":1,"device":"vm","household":null,"topic":"dosetap/home","broker":{"configured":true,"url":"mqtts://pi:8883","connected":false,
             "off":"cannot use TLS with /x.crt: Invalid function arguments provided"},"peers":[],"cascades":[]}
            """)
        #expect(off[1] == "Broker: mqtts://pi:8883 — off: cannot use TLS with /x.crt: Invalid function arguments provided; device backups are off until config.toml is fixed")
        let none = try lines(#"{"pid":1,"device":"vm","household":null,"topic":"dosetap/home","broker":{"configured":false},"peers":[],"cascades":[]}"#)
        #expect(none[1].hasPrefix("Broker: none ([mqtt] url in config.toml) — push and phone backups are sent from this machine"))
        #expect(none.suffix(2) == ["Peers: none seen", "Cascades in progress: none"])
    }

    @Test("#25: a warning line for a broker without a user name, and for plain mqtt:// beyond loopback; none for the safe configuration")
    func warnings() throws {
        func status(_ url: String, anonymous: Bool?) throws -> [String] {
            let flag = anonymous.map { ",\"anonymous\":\($0)" } ?? ""
            return try lines("""
                {"pid":1,"device":"vm","household":null,"topic":"dosetap/home","broker":{"configured":true,"url":"\(url)"\(flag),"connected":true,
                 "since":"2026-11-24T05:01:00Z"},"peers":[],"cascades":[]}
                """).filter { $0.hasPrefix("Warning:") }
        }
        let anonymous = "Warning: the broker is used without a user name: anyone who reaches it can read the household and forge its messages; give each device its own user and the ACL (docs/household.md)"
        let plain = "Warning: plain mqtt:// over the network: anyone on it can read the passwords and messages and forge them; use mqtts:// (docs/household.md)"
        #expect(try status("mqtts://pi.local:8883", anonymous: false) == [])
        #expect(try status("mqtt://127.0.0.1:1883", anonymous: false) == [], "plain on loopback is fine")
        #expect(try status("mqtt://localhost", anonymous: false) == [])
        #expect(try status("mqtt://[::1]:1883", anonymous: false) == [])
        #expect(try status("mqtts://pi.local:8883", anonymous: true) == [anonymous])
        #expect(try status("mqtts://pi.local:8883", anonymous: nil) == [anonymous], "an agent that does not say is taken as anonymous")
        #expect(try status("mqtt://pi.local:1883", anonymous: false) == [plain])
        #expect(try status("mqtt://127.evil.example:1883", anonymous: false) == [plain])
        #expect(try status("MQTT://192.168.1.5", anonymous: true) == [anonymous, plain])
    }
}
