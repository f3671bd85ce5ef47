import DoseTapApp
import DoseTapCore
import DoseTapCrypto
import DoseTapLinux
import Foundation
import Logging

/// What one advert from an added button asks for.
public struct ButtonIntent: Sendable, Equatable {
    public init(button: ButtonConfig, buttonIndex: Int, gesture: ButtonGesture, action: ButtonAction, at: Date) {
        self.button = button
        self.buttonIndex = buttonIndex
        self.gesture = gesture
        self.action = action
        self.at = at
    }

    public var button: ButtonConfig
    public var buttonIndex: Int
    public var gesture: ButtonGesture
    public var action: ButtonAction
    /// When the press reached DoseTap (its age is measured from here).
    public var at: Date
}

/// Turns adverts into intents: only for buttons on the allowlist, with BTHome's packet-id, counter and
/// bindkey rules, one hold per holding, and everything refused logged once per cause (not per packet).
public final class ButtonInterpreter: @unchecked Sendable {
    private let lock = NSLock()
    private var buttons: [String: ButtonConfig] = [:]
    private var states: [String: BTHomeDeviceState] = [:]
    private var lastHold: [String: Date] = [:]
    /// Causes already logged (bounded: a cause forgotten is logged again, never silenced).
    private var logged: RecentKeys<String>
    public static let causesKept = 1024
    /// Strangers (BTHome adverts from addresses not added): a cheap transmitter can rotate through
    /// thousands of addresses an hour. At most `strangerLinesPerHour` lines an hour, then one line saying
    /// how many were not logged; at most `strangersKept` addresses remembered (the oldest forgotten first).
    private var strangers = RecentKeys<String>(capacity: ButtonInterpreter.strangersKept)
    private var strangerWindow: (start: Date, lines: Int, suppressed: Int)?
    public static let strangersKept = 256
    public static let strangerLinesPerHour = 20
    /// Holds being followed (per added button and button index): more than this, and the finished ones go.
    static let holdsKept = 64
    private let logger: Logger

    /// - Parameter causesKept: causes remembered as logged (tests lower it to see the bound).
    public init(buttons: [ButtonConfig], logger: Logger, causesKept: Int = ButtonInterpreter.causesKept) {
        self.logger = logger
        logged = RecentKeys(capacity: causesKept)
        replace(buttons)
    }

    /// New allowlist (a button added, removed or remapped): states of buttons whose key changed restart.
    public func replace(_ new: [ButtonConfig]) {
        lock.lock()
        defer { lock.unlock() }
        let old = buttons
        buttons = Dictionary(new.map { ($0.address, $0) }, uniquingKeysWith: { a, _ in a })
        for (address, config) in buttons where old[address]?.bindkey != config.bindkey || old[address]?.kind != config.kind {
            states[address] = nil
        }
        for address in states.keys where buttons[address] == nil { states[address] = nil }
        for key in lastHold.keys where buttons[String(key.prefix { $0 != "#" })] == nil { lastHold[key] = nil }
        // A bindkey that cannot be read stops its button (it is never run without its key).
        for config in buttons.values.sorted(by: { $0.address < $1.address }) {
            if case .failure(let problem)? = config.bindkeyBytes {
                logErrorOnce("badkey:\(config.address):\(config.bindkey ?? "")", config, problem)
            }
        }
    }

    public var configured: [ButtonConfig] {
        lock.lock()
        defer { lock.unlock() }
        return Array(buttons.values)
    }

    public struct Outcome: Sendable {
        public var intents: [ButtonIntent] = []
        public var battery: (button: ButtonConfig, level: Int)?
    }

    public func interpret(_ advert: BLEAdvert) -> Outcome {
        guard let data = advert.serviceData[BLEAdvert.bthomeUUID] else { return Outcome() }
        lock.lock()
        defer { lock.unlock() }
        guard let button = buttons[advert.address], button.kind == .bthome else {
            logStranger(advert)
            return Outcome()
        }
        var state: BTHomeDeviceState
        if let known = states[advert.address] {
            state = known
        } else {
            guard let address = BluetoothAddress(advert.address) else { return Outcome() }
            // A button stored with a bindkey has a decryptor, or it does not run: never without its key.
            var decryptor: BTHomeBindkey?
            switch button.bindkeyBytes {
            case nil:
                decryptor = nil
            case .success(let bytes):
                guard let key = try? BTHomeBindkey(bytes: bytes) else {
                    logErrorOnce("badkey:\(button.address):\(button.bindkey ?? "")", button,
                                 ButtonConfig.Invalid(description: "invalid bindkey: not an AES-128 key"))
                    return Outcome()
                }
                decryptor = key
            case .failure(let problem):
                logErrorOnce("badkey:\(button.address):\(button.bindkey ?? "")", button, problem)
                return Outcome()
            }
            state = BTHomeDeviceState(address: BTHomeAddress(address), decryptor: decryptor)
        }
        // Belt and braces: with a bindkey, BTHome.parse refuses plaintext (`.downgrade`), logged below.
        guard button.bindkey == nil || state.decryptor != nil else { return Outcome() }
        let reception = state.receive(data, at: advert.receivedAt)
        states[advert.address] = state
        var outcome = Outcome()
        switch reception {
        case .duplicate:
            return outcome
        case .rejected(let rejection):
            logOnce("rejected:\(advert.address):\(rejection)", "BTHome advert rejected",
                    ["address": "\(advert.address)", "reason": "\(rejection)"])
            return outcome
        case .accepted(let parsed):
            if let battery = parsed.battery { outcome.battery = (button, Int(battery)) }
            for (index, event) in parsed.events.sorted(by: { $0.key < $1.key }) {
                guard let gesture = ButtonGesture(bthome: event) else { continue }
                if gesture == .hold {
                    // hold_press repeats while held: one hold per holding.
                    let key = "\(advert.address)#\(index)"
                    if let last = lastHold[key], advert.receivedAt.timeIntervalSince(last) < 4, advert.receivedAt >= last {
                        lastHold[key] = advert.receivedAt
                        continue
                    }
                    if lastHold.count >= Self.holdsKept {
                        lastHold = lastHold.filter { abs(advert.receivedAt.timeIntervalSince($0.value)) < 4 }
                    }
                    lastHold[key] = advert.receivedAt
                }
                outcome.intents.append(ButtonIntent(button: button, buttonIndex: index, gesture: gesture,
                                                    action: button.mapping.action(for: gesture), at: advert.receivedAt))
            }
            return outcome
        }
    }

    /// A button that cannot run (its bindkey is unreadable): an error, once per button and key.
    private func logErrorOnce(_ key: String, _ button: ButtonConfig, _ problem: ButtonConfig.Invalid) {
        guard logged.insert(key) else { return }
        logger.error("button stopped: its stored bindkey cannot be used, so it never acts; add it again with its bindkey", metadata: [
            "button": "\(DisplayText.escaped(button.name))", "address": "\(button.address)", "reason": "\(problem)",
        ])
    }

    /// A stranger's advert: logged once per address among the recent ones, within the hourly budget.
    private func logStranger(_ advert: BLEAdvert) {
        guard strangers.insert(advert.address) else { return }
        let now = advert.receivedAt
        var window = strangerWindow ?? (now, 0, 0)
        if now.timeIntervalSince(window.start) >= 3600 || now < window.start {
            if window.suppressed > 0 {
                logger.notice("ignored BTHome adverts from \(window.suppressed) more addresses that were not added (not logged one by one)")
            }
            window = (now, 0, 0)
        }
        if window.lines < Self.strangerLinesPerHour {
            window.lines += 1
            logger.notice("ignored a BTHome advert from a button that was not added", metadata: ["address": "\(advert.address)"])
        } else {
            window.suppressed += 1
        }
        strangerWindow = window
    }

    /// How many stranger addresses are remembered now (for tests: bounded whatever the radio sends).
    public var rememberedStrangers: Int {
        lock.lock()
        defer { lock.unlock() }
        return strangers.count
    }

    /// How many causes are remembered as logged, and holds followed (for tests: bounded whatever the radio sends).
    public var remembered: (causes: Int, holds: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (logged.count, lastHold.count)
    }

    private func logOnce(_ key: String, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        guard logged.insert(key) else { return }
        logger.notice(message, metadata: metadata)
    }
}
