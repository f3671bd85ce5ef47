import Foundation

/// A message from the broker. Anything in it is untrusted: the cascade parses and checks it.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// Published retained: delivered from the broker's retained store, or live but kept there for the next
    /// subscriber (the subscription's "retain as published").
    public var retained: Bool

    public init(topic: String, payload: [UInt8], retained: Bool) {
        self.topic = topic
        self.payload = payload
        self.retained = retained
    }
}


/// The household's broker as the cascade uses it (#12): the MQTT client on a real machine (`HouseholdLink`),
/// a fake in the service's unit tests. What arrives is untrusted; the cascade parses and checks it.
public protocol HouseholdBroker: Sendable {
    /// The `[mqtt] url`, for the status and the log.
    var url: String { get }
    /// No `[mqtt] username`: the broker lets anyone in (`household status` warns).
    var anonymous: Bool { get }
    /// Every message of the subscriptions, from the first connection on.
    var messages: AsyncStream<MQTTMessage> { get }
    /// The link going up (true) and down (false); the broker reconnects by itself.
    var links: AsyncStream<Bool> { get }
    /// Connects (and keeps reconnecting); throws when the first attempt fails, still trying.
    func connect(clock: any Scheduling) async throws
    /// Follows a topic pattern, on this and every later connection.
    func subscribe(_ pattern: String) throws
    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws
    /// A clean goodbye: the broker does not send the last will.
    func disconnect()
}
