internal import CMosquitto
import DoseTapCore
import Foundation
import Logging
import Synchronization

public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A client of the household's broker through libmosquitto (#12). Its network loop runs on a thread of its
/// own (`NetworkLoop`: `poll`, libmosquitto's read/write/misc steps, and reconnection with a growing delay);
/// this class turns libmosquitto's callbacks
/// into an `AsyncStream` of messages and re-subscribes on every (re)connection. The last will is set
/// before connecting, so the broker announces this agent's death to the others. It speaks MQTT 5 and
/// subscribes with "retain as published" (#25): `MQTTMessage.retained` says whether the message was
/// published retained, also when it arrives live (MQTT 3.1.1 clears the flag then, so a retained Home
/// Assistant press would look like a fresh one).
public final class MQTTClient: @unchecked Sendable {
    public struct Will: Sendable {
        public var topic: String
        public var payload: [UInt8]
        public var retain: Bool
        public init(topic: String, payload: [UInt8], retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.retain = retain
        }
    }

    /// A second reader of the same connection: the messages under its topic prefixes, and the link changes.
    struct Tap: Sendable {
        var prefixes: [String]
        var messages: AsyncStream<MQTTMessage>.Continuation
        var links: AsyncStream<Bool>.Continuation
    }

    final class State: Sendable {
        let subscriptions = Mutex<[String]>([])
        let taps = Mutex<[Tap]>([])
        let connected = Mutex<CheckedContinuation<Void, any Error>?>(nil)
        let isConnected = Mutex(false)
        let sink: AsyncStream<MQTTMessage>.Continuation
        let links: AsyncStream<Bool>.Continuation
        /// Set by the connect callback: the network loop's reconnection delay starts again from 1 s.
        let accepted = Mutex(false)
        init(sink: AsyncStream<MQTTMessage>.Continuation, links: AsyncStream<Bool>.Continuation) {
            self.sink = sink
            self.links = links
        }
    }

    /// libmosquitto, loaded at the first client (not at start-up: CMosquitto.h) and initialised once; the
    /// reason it could not be loaded, if so.
    private static let loadFailure: String? = {
        if let problem = LazyLibrary.loadProblem({ dosetap_mosquitto_load($0, $1) }) { return problem }
        mosquitto_lib_init()
        return nil
    }()

    private let handle: OpaquePointer
    private let state: State
    private let network: NetworkLoop
    private let box: Unmanaged<State>
    private let logger: Logger
    /// Every message of every subscription, in order, until `close()`.
    public let messages: AsyncStream<MQTTMessage>
    /// `true` on every (re)connection the broker accepted, `false` when the link drops.
    public let links: AsyncStream<Bool>

    /// - Parameters:
    ///   - clientID: unique in the household (the device name); the broker drops an older connection with it.
    public init(clientID: String, username: String? = nil, password: String? = nil, will: Will? = nil,
                logger: Logger = Logger(label: "dosetap.mqtt")) throws {
        if let reason = Self.loadFailure { throw MQTTError("cannot use MQTT: \(reason)") }
        let (messages, sink) = AsyncStream<MQTTMessage>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        self.messages = messages
        let (links, linkSink) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(16))
        self.links = links
        state = State(sink: sink, links: linkSink)
        box = Unmanaged.passRetained(state)
        self.logger = logger
        guard let handle = mosquitto_new(clientID, true, box.toOpaque()) else {
            box.release()
            throw MQTTError("cannot create an MQTT client: \(String(cString: strerror(errno)))")
        }
        self.handle = handle
        // Calls from other threads (publish, subscribe, disconnect) only queue; the network loop writes.
        mosquitto_threaded_set(handle, true)
        guard let network = NetworkLoop(handle: handle) else {
            mosquitto_destroy(handle)
            box.release()
            throw MQTTError("cannot create an MQTT client: \(String(cString: strerror(errno)))")
        }
        self.network = network
        if let username {
            guard mosquitto_username_pw_set(handle, username, password) == Int32(MOSQ_ERR_SUCCESS.rawValue) else {
                throw MQTTError("cannot set the MQTT user name")
            }
        }
        if let will {
            let rc = will.payload.withUnsafeBytes { mosquitto_will_set(handle, will.topic, Int32($0.count), $0.baseAddress, 1, will.retain) }
            guard rc == Int32(MOSQ_ERR_SUCCESS.rawValue) else { throw MQTTError("cannot set the last will: \(Self.describe(rc))") }
        }
        guard mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5) == Int32(MOSQ_ERR_SUCCESS.rawValue) else {
            throw MQTTError("cannot use MQTT 5")
        }
        mosquitto_connect_callback_set(handle) { mosq, context, rc in
            guard let context else { return }
            let state = Unmanaged<State>.fromOpaque(context).takeUnretainedValue()
            if rc == 0 {
                state.accepted.withLock { $0 = true }
                state.isConnected.withLock { $0 = true }
                state.links.yield(true)
                for tap in state.taps.withLock({ $0 }) { tap.links.yield(true) }
                for pattern in state.subscriptions.withLock({ $0 }) { _ = MQTTClient.subscribe(mosq, pattern) }
                state.connected.withLock { $0.take() }?.resume()
            } else {
                // MQTT 5 reason codes (0x80 and up); a broker speaking only 3.1.1 answers with its own codes.
                let reason = rc >= 0x80 ? String(cString: mosquitto_reason_string(rc)) : String(cString: mosquitto_connack_string(rc))
                state.connected.withLock { $0.take() }?.resume(throwing: MQTTError("the broker refused the connection: \(reason)"))
            }
        }
        mosquitto_disconnect_callback_set(handle) { _, context, _ in
            guard let context else { return }
            let state = Unmanaged<State>.fromOpaque(context).takeUnretainedValue()
            let was = state.isConnected.withLock { connected -> Bool in
                defer { connected = false }
                return connected
            }
            if was {
                state.links.yield(false)
                for tap in state.taps.withLock({ $0 }) { tap.links.yield(false) }
            }
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let context, let message, let topic = message.pointee.topic else { return }
            let state = Unmanaged<State>.fromOpaque(context).takeUnretainedValue()
            let count = Int(max(0, message.pointee.payloadlen))
            let payload = message.pointee.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
            let delivered = MQTTMessage(topic: String(cString: topic), payload: payload, retained: message.pointee.retain)
            if let tap = state.taps.withLock({ $0.first { $0.prefixes.contains(where: delivered.topic.hasPrefix) } }) {
                tap.messages.yield(delivered)
            } else {
                state.sink.yield(delivered)
            }
        }
    }

    deinit {
        network.stop()
        mosquitto_destroy(handle)
        state.sink.finish()
        state.links.finish()
        for tap in state.taps.withLock({ $0 }) {
            tap.messages.finish()
            tap.links.finish()
        }
        box.release()
    }

    /// Connects (the network loop starts on its own thread) and returns once the broker accepted, or throws
    /// after `timeout` seconds of elapsed time without an answer (a port that takes the connection and never
    /// speaks MQTT). libmosquitto keeps trying in the background either way.
    public func connect(host: String, port: Int, keepalive: Int = 30, timeout: TimeInterval = 10,
                        clock: any Scheduling = TimerFDScheduler.shared) async throws {
        let state = self.state
        let timer = Task {
            guard await clock.sleep(elapsing: .milliseconds(Int64((timeout * 1000).rounded()))) else { return }
            state.connected.withLock { $0.take() }?.resume(throwing: MQTTError("no answer from the broker at \(host):\(port) within \(Int(timeout)) s"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            state.connected.withLock { $0 = continuation }
            let rc = mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive))
            if rc == Int32(MOSQ_ERR_INVAL.rawValue) {
                state.connected.withLock { $0.take() }?.resume(throwing: MQTTError("cannot connect to \(host):\(port): \(Self.describe(rc))"))
                return
            }
            // A broker that is down now (refused, no route, no name yet at boot) is tried again by the network
            // loop, with a growing delay: this call gives up after `timeout`, the client does not.
            network.start(state: state, keepalive: Int32(keepalive))
        }
    }

    public var isConnected: Bool { state.isConnected.withLock { $0 } }

    /// The socket to the broker now, if any (diagnostics and tests).
    public var descriptor: Int32? {
        let fd = mosquitto_socket(handle)
        return fd >= 0 ? fd : nil
    }

    /// Another reader of this one connection (Home Assistant beside the household cascade): the messages whose
    /// topic starts with one of `prefixes` go to its stream instead of `messages`, and it hears every link
    /// change from now on (`true` at once when the link is up). Call it before those topics are subscribed.
    public func tap(prefixes: [String]) -> (messages: AsyncStream<MQTTMessage>, links: AsyncStream<Bool>) {
        let (messages, sink) = AsyncStream<MQTTMessage>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let (links, linkSink) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(16))
        state.taps.withLock { $0.append(Tap(prefixes: prefixes, messages: sink, links: linkSink)) }
        if isConnected { linkSink.yield(true) }
        return (messages, links)
    }

    /// TLS for `mqtts://`: the broker's certificate is checked against `caFile` (and its host name). Must be
    /// called before `connect`; a CA file that cannot be used throws (the feature stops: never plain text).
    public func useTLS(caFile: String?) throws {
        let rc = mosquitto_tls_set(handle, caFile, caFile == nil ? "/etc/ssl/certs" : nil, nil, nil, nil)
        guard rc == Int32(MOSQ_ERR_SUCCESS.rawValue) else { throw MQTTError("cannot use TLS with \(caFile ?? "/etc/ssl/certs"): \(Self.describe(rc))") }
        _ = mosquitto_tls_insecure_set(handle, false)
    }

    /// Subscribes now and after every reconnection. Before the broker accepted the connection the pattern is
    /// only kept (the connect callback subscribes every kept pattern): a SUBSCRIBE sent while the connection is
    /// still being made could leave before the CONNECT, and the broker would drop the connection for it.
    public func subscribe(_ pattern: String) throws {
        state.subscriptions.withLock { $0.append(pattern) }
        // The connect callback sets `isConnected` before it reads the patterns: a pattern added meanwhile is
        // subscribed by one of the two (or both: a repeated SUBSCRIBE is harmless).
        guard isConnected else { return }
        let rc = Self.subscribe(handle, pattern)
        network.wake()
        guard rc == Int32(MOSQ_ERR_SUCCESS.rawValue) || rc == Int32(MOSQ_ERR_NO_CONN.rawValue) else {
            throw MQTTError("cannot subscribe to \(pattern): \(Self.describe(rc))")
        }
    }

    /// QoS 1, retain as published.
    private static func subscribe(_ handle: OpaquePointer?, _ pattern: String) -> Int32 {
        mosquitto_subscribe_v5(handle, nil, pattern, 1, Int32(MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue), nil)
    }

    /// Publishes with QoS 1 (queued by libmosquitto while disconnected).
    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        let rc = payload.withUnsafeBytes { mosquitto_publish(handle, nil, topic, Int32($0.count), $0.baseAddress, 1, retain) }
        network.wake()
        guard rc == Int32(MOSQ_ERR_SUCCESS.rawValue) || rc == Int32(MOSQ_ERR_NO_CONN.rawValue) else {
            throw MQTTError("cannot publish to \(topic): \(Self.describe(rc))")
        }
    }

    /// A clean disconnect: the broker does not send the last will.
    public func disconnect() {
        network.close()
    }

    /// For tests: the connection drops as if the machine died (the broker then publishes the last will).
    public func dropConnection() {
        network.stop(dropping: true)
    }

    /// libmosquitto's reason, without its final period (it goes inside our sentences).
    static func describe(_ rc: Int32) -> String {
        let text = String(cString: mosquitto_strerror(rc))
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }
}
