import DoseTapCore
import DoseTapCrypto
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Synchronization

/// Flic 2 buttons: one `GATTButtonClient` follower per added Flic 2, each connection talking the Flic 2 protocol
/// (`Flic2Session`: quick verify with the stored pairing, the button's own gestures, queued events once) through a
/// `Flic2Conversation`. Gestures, batteries and link changes become `ButtonSignal`s; how far events were acted on is
/// kept in the store, so neither a reconnect nor a restart acts on an event twice.
final class Flic2Source: ButtonSource, Sendable {
    let bluez: BlueZClient
    let clock: any Scheduling
    let logger: Logger
    let disconnectOnStop: Bool
    /// Where each button's progress is kept (nil: only in memory, for this run).
    let store: ButtonRepository?
    let factoryKey: [UInt8]
    let followers = ITagFollowers()
    let buttons = Mutex<[String: ButtonConfig]>([:])
    let memory = Flic2ProgressMemory()
    /// The last reason each button's session ended, so a button that keeps failing is not logged at every retry.
    let lastEnd = Mutex<[String: String]>([:])

    init(bluez: BlueZClient, clock: any Scheduling, logger: Logger, disconnectOnStop: Bool, store: ButtonRepository?,
         factoryKey: [UInt8]) {
        self.bluez = bluez
        self.clock = clock
        self.logger = logger
        self.disconnectOnStop = disconnectOnStop
        self.store = store
        self.factoryKey = factoryKey
    }

    var kinds: Set<ButtonKind> { [.flic2] }

    func follow(_ configs: [ButtonConfig]) async {
        var usable: [String: ButtonConfig] = [:]
        for button in configs where button.kind == .flic2 {
            switch button.flic2Pairing {
            case .success?:
                usable[button.address] = button
            case .failure(let problem)?:
                logger.error("button stopped: its stored Flic 2 pairing cannot be used, so it never acts; add it again (dosetap button add --kind flic2)",
                             metadata: ["button": "\(DisplayText.escaped(button.name))", "address": "\(button.address)", "reason": "\(problem)"])
            case nil:
                logger.error("button stopped: a Flic 2 without a pairing never acts; add it again (dosetap button add --kind flic2)",
                             metadata: ["button": "\(DisplayText.escaped(button.name))", "address": "\(button.address)"])
            }
        }
        buttons.withLock { $0 = usable }
        followers.setAddresses(Set(usable.keys))
    }

    func run(into sink: @escaping @Sendable (ButtonSignal) -> Void) async {
        let client = GATTButtonClient(bluez: bluez, clock: clock, logger: logger)
        let source = self
        followers.start(client: client, disconnectOnStop: disconnectOnStop, profile: .flic2, conversation: { address in
            { source.conversation(address, sink) }
        }) { address, event in
            switch event {
            case .connected:
                sink(.link(address: address, kind: .flic2, .connected(detail: [:])))
            case .disconnected(let reason):
                sink(.link(address: address, kind: .flic2, .disconnected(reason: reason, interruptedPress: false)))
            case .battery, .press:
                break  // a Flic 2 reports both through its protocol
            }
        }
        await Task.untilCancelled()
        await followers.stopAll()
    }

    func close() {}

    /// A conversation for one connection to `address`, with the pairing and progress as they are now.
    private func conversation(_ address: String, _ sink: @escaping @Sendable (ButtonSignal) -> Void) -> any GATTConversation {
        let config = buttons.withLock { $0[address] }
        guard let config, case .success(let pairing)? = config.flic2Pairing,
              let bluetooth = BluetoothAddress(address) else {
            return Flic2Conversation.refusing(reason: "the button is no longer added")
        }
        let stored = (try? store?.progress(address: address)) ?? nil
        let progress = stored ?? memory.get(address) ?? Flic2EventProgress()
        let session = Flic2Session(mode: .resume(pairing, progress), address: bluetooth, crypto: SwiftCryptoFlic2(), factoryKey: factoryKey)
        let (clock, memory, store, logger) = (self.clock, self.memory, self.store, self.logger)
        let firstTime: @Sendable (String?) -> Bool = { [self] reason in
            self.lastEnd.withLock { last in
                defer { last[address] = reason }
                return reason != nil && last[address] != reason
            }
        }
        return Flic2Conversation(session: session, name: config.name, logger: logger, now: { clock.now() }, firstTime: firstTime) { output in
            switch output {
            case .gesture(let gesture, _, let age, _, let at):
                sink(.gesture(address: address, kind: .flic2, gesture, pressedAt: at.addingTimeInterval(-age)))
            case .battery(let millivolts, let at):
                sink(.battery(address: address, kind: .flic2, level: Flic2Battery.percent(millivolts: millivolts), at: at))
            case .progress(let progress):
                memory.set(address, progress)
                do { try store?.saveProgress(progress, address: address) } catch {
                    logger.error("cannot keep the Flic 2's event count", metadata: ["button": "\(address)", "error": "\(error)"])
                }
            }
        }
    }

    /// The factory key certificates must be signed with: Flic's. A debug build takes a test key from
    /// `DOSETAP_TEST_FLIC2_FACTORY_KEY` (64 hex digits) so the simulated button of the tests can pair; a release
    /// build has no such door.
    static func factoryKey(environment: [String: String] = ProcessInfo.processInfo.environment) -> [UInt8] {
        #if DEBUG
        if let text = environment["DOSETAP_TEST_FLIC2_FACTORY_KEY"], let key = HexBytes.parseOrNil(text, count: 32) { return key }
        #endif
        return Flic2KeySchedule.factoryPublicKey
    }
}

/// The last progress of each button this run, for a store that cannot be written.
final class Flic2ProgressMemory: Sendable {
    private let values = Mutex<[String: Flic2EventProgress]>([:])
    func get(_ address: String) -> Flic2EventProgress? { values.withLock { $0[address] } }
    func set(_ address: String, _ progress: Flic2EventProgress) { values.withLock { $0[address] = progress } }
}

/// One connection's Flic 2 protocol on the GATT link: the session's frames become writes, its verify gets 31 s,
/// the battery is asked for after verifying and every 6 hours, and an ended session ends the link with its reason
/// (logged once per reason, not at every reconnect).
final class Flic2Conversation: GATTConversation, @unchecked Sendable {
    enum Report {
        case gesture(ButtonGesture, eventCount: UInt32, age: TimeInterval, queued: Bool, at: Date)
        case battery(millivolts: Int, at: Date)
        case progress(Flic2EventProgress)
    }

    static let verifyTimeout: Duration = .seconds(31)
    static let batteryInterval: Duration = .seconds(6 * 3600)

    private let lock = NSLock()
    private var session: Flic2Session?
    private let refusal: String?
    private let name: String
    private let logger: Logger?
    private let now: @Sendable () -> Date
    private let report: @Sendable (Report) -> Void
    /// True the first time a reason is given (nil: verified, which resets it).
    private let firstTime: @Sendable (String?) -> Bool

    init(session: Flic2Session, name: String, logger: Logger, now: @escaping @Sendable () -> Date,
         firstTime: @escaping @Sendable (String?) -> Bool, report: @escaping @Sendable (Report) -> Void) {
        self.session = session
        refusal = nil
        self.name = name
        self.logger = logger
        self.now = now
        self.firstTime = firstTime
        self.report = report
    }

    private init(refusal: String) {
        session = nil
        self.refusal = refusal
        name = ""
        logger = nil
        now = { Date() }
        firstTime = { _ in false }
        report = { _ in }
    }

    static func refusing(reason: String) -> Flic2Conversation { Flic2Conversation(refusal: reason) }

    func opened(mtu: Int) -> GATTReply {
        lock.lock()
        defer { lock.unlock() }
        guard var session else { return GATTReply(end: refusal ?? "no session") }
        session.mtu = mtu
        let outputs = session.start()
        self.session = session
        var reply = handle(outputs, session: session)
        if reply.end == nil { reply.timeout = Self.verifyTimeout }
        return reply
    }

    func received(_ value: [UInt8], at: Date) -> GATTReply {
        lock.lock()
        defer { lock.unlock() }
        guard var session else { return GATTReply(end: refusal ?? "no session") }
        let wasEstablished = session.isEstablished
        let outputs = session.receive(value)
        var reply = handle(outputs, session: session, at: at)
        if !wasEstablished, session.isEstablished {
            // Verified: the battery now, then every few hours; the verify timer is replaced.
            reply.writes += writes(session.requestBattery())
            reply.timeout = Self.batteryInterval
        }
        self.session = session
        return reply
    }

    func timedOut() -> GATTReply {
        lock.lock()
        defer { lock.unlock() }
        guard var session else { return GATTReply(end: refusal ?? "no session") }
        if session.isEstablished {
            let reply = GATTReply(writes: writes(session.requestBattery()), timeout: Self.batteryInterval)
            self.session = session
            return reply
        }
        let outputs = session.timedOut()
        self.session = session
        return handle(outputs, session: session)
    }

    func closed(reason: String) {}

    private func writes(_ outputs: [Flic2Session.Output]) -> [[UInt8]] {
        outputs.compactMap { if case .write(let frame) = $0 { frame } else { nil } }
    }

    private func handle(_ outputs: [Flic2Session.Output], session: Flic2Session, at: Date? = nil) -> GATTReply {
        var reply = GATTReply()
        let name = DisplayText.escaped(self.name)
        for output in outputs {
            switch output {
            case .write(let frame):
                reply.writes.append(frame)
            case .verified:
                _ = firstTime(nil)
                logger?.info("Flic 2 verified: listening for presses", metadata: ["button": "\(name)"])
            case .paired:
                break  // pairing is `button add`'s, not the agent's
            case .gesture(let gesture, let count, let age, let queued):
                if queued {
                    logger?.info("Flic 2 press queued while out of reach", metadata: [
                        "button": "\(name)", "gesture": "\(gesture.rawValue)", "age": "\(String(format: "%.1f", age)) s",
                    ])
                }
                report(.gesture(gesture, eventCount: count, age: age, queued: queued, at: at ?? now()))
            case .progress(let progress):
                report(.progress(progress))
            case .battery(let millivolts):
                report(.battery(millivolts: millivolts, at: at ?? now()))
            case .ended(let failure):
                if firstTime(failure.description) {
                    switch failure {
                    case .pairingUnknown, .storedPairingUnusable:
                        // Only the person can mend this (pair again): an error, and the button never acts meanwhile.
                        logger?.error("Flic 2 stopped: its pairing no longer works, so it never acts until it is added again (dosetap button add --kind flic2)",
                                      metadata: ["button": "\(name)", "reason": "\(failure)"])
                    default:
                        logger?.warning("Flic 2 session ended: nothing more is acted on until it verifies again", metadata: [
                            "button": "\(name)", "reason": "\(failure)",
                        ])
                    }
                }
                reply.end = "Flic 2: \(failure)"
            }
        }
        return reply
    }
}
