import DoseTapCore
import Foundation
import Synchronization

/// A household broker in memory, for the household service's unit tests: it records what the service
/// subscribed to and published, and delivers what the test says a peer published.
public final class FakeHouseholdBroker: HouseholdBroker, Sendable {
    public struct Published: Sendable, Equatable {
        public var topic: String
        public var payload: [UInt8]
        public var retain: Bool
        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    private struct State {
        var published: [Published] = []
        var subscriptions: [String] = []
        var connects = 0
        var disconnects = 0
    }

    public let url: String
    public let anonymous: Bool
    public let messages: AsyncStream<MQTTMessage>
    public let links: AsyncStream<Bool>
    private let messageSink: AsyncStream<MQTTMessage>.Continuation
    private let linkSink: AsyncStream<Bool>.Continuation
    private let state = Mutex(State())

    public init(url: String = "mqtt://fake:1883", anonymous: Bool = false) {
        self.url = url
        self.anonymous = anonymous
        (messages, messageSink) = AsyncStream<MQTTMessage>.makeStream()
        (links, linkSink) = AsyncStream<Bool>.makeStream()
    }

    public var published: [Published] { state.withLock { $0.published } }
    public var subscriptions: [String] { state.withLock { $0.subscriptions } }
    public var connects: Int { state.withLock { $0.connects } }
    public var disconnects: Int { state.withLock { $0.disconnects } }

    /// The link goes up or down, as a real broker's would.
    public func link(_ up: Bool) { linkSink.yield(up) }

    /// A message arrives, as if another device published it.
    public func deliver(topic: String, _ text: String, retained: Bool = false) {
        messageSink.yield(MQTTMessage(topic: topic, payload: Array(text.utf8), retained: retained))
    }

    public func connect(clock: any Scheduling) async throws {
        state.withLock { $0.connects += 1 }
    }

    public func subscribe(_ pattern: String) throws {
        state.withLock { $0.subscriptions.append(pattern) }
    }

    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        state.withLock { $0.published.append(Published(topic: topic, payload: payload, retain: retain)) }
    }

    public func disconnect() {
        state.withLock { $0.disconnects += 1 }
    }
}
