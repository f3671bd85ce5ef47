import DoseTapApp
import DoseTapCore
import DoseTapLinux

/// The household broker on the machine: `[mqtt]`'s MQTT client behind the `HouseholdBroker` port (Home
/// Assistant shares the client's connection).
public struct HouseholdLink: HouseholdBroker {
    public var client: MQTTClient
    public var host: String
    public var port: Int
    /// The `[mqtt] url`, for the status.
    public var url: String
    /// No `[mqtt] username`: the broker lets anyone in (`household status` warns).
    public var anonymous: Bool

    public init(client: MQTTClient, host: String, port: Int, url: String, anonymous: Bool = true) {
        self.client = client
        self.host = host
        self.port = port
        self.url = url
        self.anonymous = anonymous
    }

    public var messages: AsyncStream<MQTTMessage> { client.messages }
    public var links: AsyncStream<Bool> { client.links }

    public func connect(clock: any Scheduling) async throws {
        try await client.connect(host: host, port: port, clock: clock)
    }

    public func subscribe(_ pattern: String) throws { try client.subscribe(pattern) }

    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        try client.publish(topic, payload, retain: retain)
    }

    public func disconnect() { client.disconnect() }

    /// A broker configured but not used: a security setting could not be applied (the reason says which).
    public struct Refused: Error, Sendable, Equatable {
        public var url: String
        public var reason: String
    }
}

/// Who this agent is in the household.
public struct HouseholdIdentity: Sendable, Equatable {
    /// `[household] name` as written ("Jen's family"), for the words of a call.
    public var name: String?
    /// The topic level (`HouseholdTopic.slug`).
    public var topic: String
    /// This machine's `[household] device`.
    public var device: String

    public init(name: String?, device: String) {
        self.name = name
        topic = HouseholdTopic.slug(name)
        self.device = device
    }
}
