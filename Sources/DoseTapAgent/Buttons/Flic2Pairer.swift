import DoseTapApp
import DoseTapCore
import DoseTapCrypto
import DoseTapLinux
import Foundation
import Logging
import Synchronization

/// Pairing with a Flic 2 as a person does it (`dosetap button add --kind flic2`): the button held for 7 seconds
/// until it flashes (public mode), then a full verify over its GATT link through BlueZ — the link found (discovered
/// if BlueZ does not know the button yet), connected, the button's certificate checked against Flic's factory key
/// and its address, the key exchange, the pairing. The link this makes is dropped at the end; the agent then
/// connects with quick verify.
public enum Flic2Pairer {
    public struct Paired: Sendable {
        public var pairing: Flic2Pairing
        public var info: Flic2ButtonInfo
    }

    /// Pairs, or throws the one-line reason (`UseCaseError`). `progress` gets a line at each step.
    public static func pair(address: String, seconds: Int, logger: Logger,
                            factoryKey: [UInt8]? = nil,
                            progress: @escaping @Sendable (String) -> Void) async throws -> Paired {
        guard let bluetooth = BluetoothAddress(address) else {
            throw UseCaseError("invalid address '\(DisplayText.escaped(address, maxLength: 40))'")
        }
        let factoryKey = factoryKey ?? Flic2Source.factoryKey()
        let bluez = try BlueZButtonScanner.client(logger: logger)
        let client = GATTButtonClient(bluez: bluez, clock: TimerFDScheduler.shared, logger: logger)
        let (results, result) = AsyncStream<Result<Paired, Flic2Failure>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let follower = Task {
            await client.follow(address: bluetooth.description, profile: .flic2, conversation: {
                PairingConversation(session: Flic2Session(mode: .pair, address: bluetooth, crypto: SwiftCryptoFlic2(), factoryKey: factoryKey),
                                    progress: progress) { result.yield($0) }
            }, disconnectOnStop: true) { event in
                if case .connected = event { progress("Connected: verifying the button…") }
            }
        }
        let timer = Task {
            _ = await TimerFDScheduler.shared.sleep(for: TimeInterval(seconds))
            result.finish()
        }
        var outcome: Result<Paired, Flic2Failure>?
        for await first in results {
            outcome = first
            break
        }
        timer.cancel()
        follower.cancel()
        await follower.value
        bluez.connection.close()
        switch outcome {
        case .success(let paired)?:
            return paired
        case .failure(let failure)?:
            throw UseCaseError("pairing failed: \(failure)")
        case nil:
            throw UseCaseError("no Flic 2 paired at \(bluetooth) within \(seconds) s: is it in reach, and in pairing mode (hold it for 7 seconds until it flashes)?")
        }
    }
}

/// One connection's full verify: the first outcome (paired, or why not) is reported and ends the link.
final class PairingConversation: GATTConversation, @unchecked Sendable {
    private let lock = NSLock()
    private var session: Flic2Session
    private let progress: @Sendable (String) -> Void
    private let report: @Sendable (Result<Flic2Pairer.Paired, Flic2Failure>) -> Void

    init(session: Flic2Session, progress: @escaping @Sendable (String) -> Void,
         report: @escaping @Sendable (Result<Flic2Pairer.Paired, Flic2Failure>) -> Void) {
        self.session = session
        self.progress = progress
        self.report = report
    }

    func opened(mtu: Int) -> GATTReply {
        lock.lock()
        defer { lock.unlock() }
        session.mtu = mtu
        var reply = handle(session.start())
        if reply.end == nil { reply.timeout = Flic2Conversation.verifyTimeout }
        return reply
    }

    func received(_ value: [UInt8], at: Date) -> GATTReply {
        lock.lock()
        defer { lock.unlock() }
        return handle(session.receive(value))
    }

    func timedOut() -> GATTReply {
        lock.lock()
        defer { lock.unlock() }
        return handle(session.timedOut())
    }

    func closed(reason: String) {}

    private func handle(_ outputs: [Flic2Session.Output]) -> GATTReply {
        var reply = GATTReply()
        for output in outputs {
            switch output {
            case .write(let frame):
                reply.writes.append(frame)
            case .paired(let pairing, let info):
                report(.success(Flic2Pairer.Paired(pairing: pairing, info: info)))
                reply.writes = []
                reply.end = "paired"
                return reply
            case .ended(let failure):
                report(.failure(failure))
                reply.end = "\(failure)"
                return reply
            default:
                break
            }
        }
        return reply
    }
}
