import DoseTapApp
import DoseTapCore
import DoseTapLinux

/// The household broker, as the cascade uses it (`MQTTClient` on the machine).
public struct HouseholdLink: Sendable {
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
