import DoseTapCore
import Foundation

/// `dosetap household status` (#12): what the running agent records in `household-status.json` (the broker,
/// the peers with their last heartbeat, the cascades under way), read while the agent holds the file. The
/// agent writes this type (`json`) and the command line decodes it: one type for both sides (#26).
public struct HouseholdStatus: Sendable, Equatable, Decodable {
    public static let fileName = "household-status.json"

    public struct Broker: Sendable, Equatable, Decodable {
        public var configured: Bool
        public var url: String?
        public var connected: Bool?
        public var since: String?
        /// A configured broker that is not used: why (a password or TLS setting that could not be applied).
        public var off: String?
        /// No user name: anyone who reaches the broker may read and publish.
        public var anonymous: Bool?

        public init(configured: Bool, url: String? = nil, connected: Bool? = nil, since: String? = nil, off: String? = nil,
                    anonymous: Bool? = nil) {
            self.configured = configured
            self.url = url
            self.connected = connected
            self.since = since
            self.off = off
            self.anonymous = anonymous
        }

        /// What docs/household.md's safe configuration would change: one line each.
        public var warnings: [String] {
            guard configured, off == nil, let url else { return [] }
            var out: [String] = []
            if anonymous != false {
                out.append("Warning: the broker is used without a user name: anyone who reaches it can read the household and forge its messages; give each device its own user and the ACL (docs/household.md)")
            }
            if let parts = URLComponents(string: url), parts.scheme?.lowercased() == "mqtt", !Self.isLoopback(parts.host ?? "") {
                out.append("Warning: plain mqtt:// over the network: anyone on it can read the passwords and messages and forge them; use mqtts:// (docs/household.md)")
            }
            return out
        }

        static func isLoopback(_ host: String) -> Bool {
            let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            let ipv4 = parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
            return host == "localhost" || host == "::1" || (ipv4 && parts[0] == "127")
        }
    }

    public struct Peer: Sendable, Equatable, Decodable {
        public var device: String
        public var online: Bool
        public var lastHeartbeat: String?
        /// Its clock minus this machine's, in seconds, when they are more than `HouseholdPeers.clockTolerance` apart
        /// (#51 finding 8); nil otherwise (or not measured yet).
        public var clockOffset: Int?

        public init(device: String, online: Bool, lastHeartbeat: String?, clockOffset: Int? = nil) {
            self.device = device
            self.online = online
            self.lastHeartbeat = lastHeartbeat
            self.clockOffset = clockOffset
        }

        /// "clock 10 min ahead of this one's", or nil.
        public var clockText: String? {
            guard let offset = clockOffset else { return nil }
            let size = abs(offset)
            let amount = size >= 90 ? "\(Int((Double(size) / 60).rounded())) min" : "\(size) s"
            return "clock \(amount) \(offset > 0 ? "ahead of" : "behind") this one's: its slots and answers are read on this clock"
        }
    }

    public struct Slot: Sendable, Equatable, Decodable {
        public var target: String
        public var at: String
        public var done: String?

        public init(target: String, at: String, done: String?) {
            self.target = target
            self.at = at
            self.done = done
        }
    }

    public struct Cascade: Sendable, Equatable, Decodable {
        public var owner: String
        public var alarm: Int
        public var label: String
        public var time: String
        public var occurrence: String
        public var next: String?
        public var fired: [Slot]

        public init(owner: String, alarm: Int, label: String, time: String, occurrence: String, next: String?, fired: [Slot]) {
            self.owner = owner
            self.alarm = alarm
            self.label = label
            self.time = time
            self.occurrence = occurrence
            self.next = next
            self.fired = fired
        }
    }

    /// The agent that wrote it.
    public var pid: Int?
    public var device: String
    public var household: String?
    public var topic: String
    public var broker: Broker
    public var peers: [Peer]
    public var cascades: [Cascade]

    public init(pid: Int?, device: String, household: String?, topic: String, broker: Broker, peers: [Peer], cascades: [Cascade]) {
        self.pid = pid
        self.device = device
        self.household = household
        self.topic = topic
        self.broker = broker
        self.peers = peers
        self.cascades = cascades
    }

    /// The file's text: every key present (null when unknown), in this order.
    public var json: JSON {
        func text(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }
        var brokerFields: [(String, JSON)] = [("configured", .bool(broker.configured))]
        if let url = broker.url { brokerFields.append(("url", .string(url))) }
        if let anonymous = broker.anonymous { brokerFields.append(("anonymous", .bool(anonymous))) }
        if let connected = broker.connected { brokerFields.append(("connected", .bool(connected))) }
        if broker.connected != nil, broker.off == nil { brokerFields.append(("since", text(broker.since))) }
        if let off = broker.off { brokerFields.append(("off", .string(off))) }
        return .object([
            ("pid", pid.map { .int($0) } ?? .null), ("device", .string(device)), ("household", text(household)),
            ("topic", .string(topic)), ("broker", .object(brokerFields)),
            ("peers", .array(peers.map { .object([("device", .string($0.device)), ("online", .bool($0.online)),
                                                  ("lastHeartbeat", text($0.lastHeartbeat)),
                                                  ("clockOffset", $0.clockOffset.map { .int($0) } ?? .null)]) })),
            ("cascades", .array(cascades.map { c in
                .object([("owner", .string(c.owner)), ("alarm", .int(c.alarm)), ("label", .string(c.label)), ("time", .string(c.time)),
                         ("occurrence", .string(c.occurrence)), ("next", text(c.next)),
                         ("fired", .array(c.fired.map { .object([("target", .string($0.target)), ("at", .string($0.at)), ("done", text($0.done))]) }))])
            })),
        ])
    }

    /// The text of `household status`: times in `timeZone`, device text escaped.
    public func lines(timeZone: TimeZone) -> [String] {
        func when(_ text: String?) -> String {
            guard let text, let date = ISO8601DateFormatter().date(from: text) else { return "never" }
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = timeZone
            f.dateFormat = "yyyy-MM-dd HH:mm:ss"
            return f.string(from: date)
        }
        let e = { (text: String) in DisplayText.escaped(text, maxLength: 120) }
        var out = ["Household: \(household.map(e) ?? "(no [household] name)") — topics \(e(topic))/…, this device: \(e(device))"]
        if broker.configured, let off = broker.off {
            out.append("Broker: \(e(broker.url ?? "?")) — off: \(e(off)); device backups are off until config.toml is fixed")
        } else if broker.configured {
            let state = broker.connected == true ? "connected since \(when(broker.since))" : "not connected (since \(when(broker.since)); still trying)"
            out.append("Broker: \(e(broker.url ?? "?")) — \(state)")
            out += broker.warnings
        } else {
            out.append("Broker: none ([mqtt] url in config.toml) — push and phone backups are sent from this machine; device backups need the broker")
        }
        if peers.isEmpty {
            out.append("Peers: none seen")
        } else {
            out.append("Peers:")
            for peer in peers {
                out.append("  \(e(peer.device).padding(toLength: max(16, peer.device.count), withPad: " ", startingAt: 0)) \(peer.online ? "online " : "offline") last heartbeat \(when(peer.lastHeartbeat))"
                           + (peer.clockText.map { " — \($0)" } ?? ""))
            }
        }
        if cascades.isEmpty {
            out.append("Cascades in progress: none")
        } else {
            out.append("Cascades in progress:")
            for cascade in cascades {
                let next = cascade.next.map { "next \(when($0))" } ?? "nothing more to fire"
                out.append("  \(e(cascade.owner)) alarm \(cascade.alarm) \"\(e(cascade.label))\" at \(e(cascade.time)) — \(next)")
                for slot in cascade.fired {
                    out.append("    \(when(slot.at)) \(e(slot.target))\(slot.done.map { " (\(e($0)) here)" } ?? "")")
                }
            }
        }
        return out
    }
}
