import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Synchronization

/// What one button signal becomes, in order: the allowlist and the BTHome rules (adverts) or the gesture
/// recognizer (raw keys) → intents → the flood guard → the dose use case (policy, commit, nudge, events).
/// Synchronous: the timers it needs (a single whose double window passed, a hold, an intent queued behind a
/// flood) are scheduled on the scheduling port and come back through `expireGestures`. Feedback is not
/// played here: it follows the `doseRecorded`/`doseRefused` events (`DoseInputFeedback`).
public final class ButtonPipeline: Sendable {
    public let interpreter: ButtonInterpreter
    /// One gesture recognizer per HID remote and iTag.
    private let recognizers = ButtonRecognizers()
    private let doses: DoseUseCases?
    private let samples: BatterySampleRepository?
    private let events: EventBus?
    private let clock: any Scheduling
    private let logger: Logger
    private let guards = Mutex<[String: ButtonFloodGuard]>([:])
    private let lastBattery = Mutex<[String: Date]>([:])
    /// The pending gesture timer of each button (a new deadline replaces it).
    private let timers = Mutex<[String: Task<Void, Never>]>([:])
    /// When set (`dosetap button test`), gestures are handed here instead of acting, and nothing is stored.
    private let observer: (@Sendable (ButtonIntent) -> Void)?
    /// The ringing alarm: while it rings, every button is its Stop (single) and Snooze (double).
    private let alarms: (any RingAnswering)?

    /// How long an intent queued behind a flood waits before it is decided (by then it is stale).
    public static let queueDelay: TimeInterval = 4

    /// - Parameters:
    ///   - doses: where intents go; nil only when observing.
    ///   - samples: where button batteries are kept; nil only when observing.
    ///   - alarms: the ringing alarm, which takes every press while it rings (never a dose then).
    public init(buttons: [ButtonConfig], doses: DoseUseCases?, samples: BatterySampleRepository?, events: EventBus?,
                clock: any Scheduling, logger: Logger, observer: (@Sendable (ButtonIntent) -> Void)? = nil,
                alarms: (any RingAnswering)? = nil) {
        self.alarms = alarms
        interpreter = ButtonInterpreter(buttons: buttons, logger: logger)
        self.doses = doses
        self.samples = samples
        self.events = events
        self.clock = clock
        self.logger = logger
        self.observer = observer
    }

    deinit {
        for timer in timers.withLock({ $0.values }) { timer.cancel() }
    }

    /// The added buttons of one kind, by address.
    public func configured(_ kind: ButtonKind) -> Set<String> {
        Set(interpreter.configured.filter { $0.kind == kind }.map(\.address))
    }

    /// Decides one signal. Returns the outcomes of the dose inputs it completed (for tests and benchmarks).
    @discardableResult
    public func handle(_ signal: ButtonSignal) -> [DoseOutcome] {
        switch signal {
        case .advert(let advert):
            let outcome = interpreter.interpret(advert)
            if let (button, level) = outcome.battery { recordBattery(button, level, at: advert.receivedAt) }
            return act(on: outcome.intents)
        case .key(let address, let kind, let key):
            guard let button = button(address, kind) else { return [] }
            if kind == .itag { logger.info("iTag press", metadata: ["button": "\(DisplayText.escaped(button.name))"]) }
            let (gestures, deadline) = recognizers.feed(key, button: button)
            if let deadline { scheduleExpiry(address: address, at: deadline) }
            return act(on: intents(button, gestures))
        case .gesture(let address, let kind, let gesture, let pressedAt):
            guard let button = button(address, kind) else { return [] }
            return act(on: [ButtonIntent(button: button, buttonIndex: 0, gesture: gesture, action: button.mapping.action(for: gesture),
                                         at: pressedAt)])
        case .battery(let address, let kind, let level, let at):
            guard let button = button(address, kind) else { return [] }
            logger.debug(kind == .flic2 ? "Flic 2 battery" : "iTag battery", metadata: ["button": "\(DisplayText.escaped(button.name))", "level": "\(level)"])
            recordBattery(button, level, at: at)
            return []
        case .link(let address, let kind, let change):
            linkChanged(address: address, kind: kind, change)
            return []
        }
    }

    /// Resolves what time alone decides for a HID remote or an iTag (a single whose double window passed, a hold).
    @discardableResult
    public func expireGestures(address: String, at now: Date) -> [DoseOutcome] {
        guard let button = interpreter.configured.first(where: { $0.address == address && ($0.kind == .hid || $0.kind == .itag) }) else {
            return []
        }
        return act(on: intents(button, recognizers.expire(address: address, at: now)))
    }

    /// Replaces the allowlist (the command line added, removed or remapped a button).
    public func replace(_ buttons: [ButtonConfig]) {
        interpreter.replace(buttons)
    }

    private func button(_ address: String, _ kind: ButtonKind) -> ButtonConfig? {
        interpreter.configured.first { $0.address == address && $0.kind == kind }
    }

    private func linkChanged(address: String, kind: ButtonKind, _ change: ButtonLinkChange) {
        // iTags: the GATT client logs its link's changes itself.
        guard kind == .hid else { return }
        switch change {
        case .connected(let detail):
            var metadata: Logger.Metadata = ["remote": "\(address)"]
            for (key, value) in detail { metadata[key] = "\(value)" }
            logger.info("HID remote connected", metadata: metadata)
        case .disconnected(_, let interrupted):
            if interrupted { recognizers.reset(address: address) }
            logger.info("HID remote disconnected", metadata: ["remote": "\(address)"])
        case .unavailable(let reason):
            logger.warning("HID remote unavailable", metadata: ["remote": "\(address)", "error": "\(reason)"])
        }
    }

    /// Puts intents through the flood guard and the dose use case.
    @discardableResult
    public func act(on intents: [ButtonIntent]) -> [DoseOutcome] {
        if let observer {
            intents.forEach(observer)
            return []
        }
        var results: [DoseOutcome] = []
        for intent in intents {
            let name = DisplayText.escaped(intent.button.name)
            if let alarms, alarms.claimsButtons(at: clock.now()) {
                // A press made long before it arrived (queued in a Flic 2 out of reach, an old HID event) was not
                // meant for this alarm: it neither stops nor snoozes it (nor is it a dose).
                let age = clock.now().timeIntervalSince(intent.at)
                guard abs(age) <= DoseRules.maximumInputAge else {
                    logger.notice("button press too old to answer the alarm: ignored", metadata: [
                        "button": "\(name)", "gesture": "\(intent.gesture.rawValue)", "age": "\(Int(abs(age).rounded())) s",
                    ])
                    continue
                }
                answerAlarm(alarms, intent, name: name)
                continue
            }
            guard let command = intent.action.command else {
                events?.publish(.buttonPressed(address: intent.button.address, gesture: intent.gesture.rawValue))
                logger.info("button gesture without an action", metadata: ["button": "\(name)", "gesture": "\(intent.gesture.rawValue)"])
                continue
            }
            let verdict = guards.withLock { g -> ButtonFloodGuard.Verdict in
                var guard_ = g[intent.button.address] ?? ButtonFloodGuard()
                let v = guard_.admit(at: intent.at)
                g[intent.button.address] = guard_
                return v
            }
            switch verdict {
            case .muted(let until, let announce):
                if announce {
                    logger.warning("button flooding: muted for 5 minutes", metadata: ["button": "\(name)", "until": "\(until)"])
                }
                continue
            case .queue:
                events?.publish(.buttonPressed(address: intent.button.address, gesture: intent.gesture.rawValue))
                // Queued behind the flood: by the time it is decided it is stale, so it can never log a dose.
                // The wait is a timer of its own, so a flooding button never holds up the others.
                let clock = self.clock
                Task {
                    guard await clock.sleep(for: Self.queueDelay) != .cancelled else { return }
                    // An alarm started meanwhile: the press was not for it, and it is no dose either.
                    if let alarms = self.alarms, alarms.claimsButtons(at: clock.now()) { return }
                    self.decide(intent, command: command)
                }
                continue
            case .allow:
                events?.publish(.buttonPressed(address: intent.button.address, gesture: intent.gesture.rawValue))
            }
            if let result = decide(intent, command: command) { results.append(result) }
        }
        return results
    }

    /// A press while an alarm rings (or just after): single Stop, double Snooze, anything else nothing. It
    /// never reaches the dose use case, whatever the button's mapping.
    private func answerAlarm(_ alarms: any RingAnswering, _ intent: ButtonIntent, name: String) {
        events?.publish(.buttonPressed(address: intent.button.address, gesture: intent.gesture.rawValue))
        let answered: Bool
        switch intent.gesture {
        case .single where alarms.isRinging: answered = alarms.stop(by: .button)
        case .double where alarms.isRinging: answered = alarms.snooze(by: .button)
        default: answered = false
        }
        logger.notice(answered ? "button answered the alarm" : "button press during or just after an alarm: no action, no dose",
                      metadata: ["button": "\(name)", "gesture": "\(intent.gesture.rawValue)"])
    }

    @discardableResult
    private func decide(_ intent: ButtonIntent, command: DoseCommand) -> DoseOutcome? {
        guard let doses else { return nil }
        let name = DisplayText.escaped(intent.button.name)
        do {
            let submission = try doses.submit(command, source: .button, issuedAt: intent.at)
            switch submission.outcome {
            case .recorded(_, let confirmation, _):
                logger.notice("button action recorded", metadata: [
                    "button": "\(name)", "gesture": "\(intent.gesture.rawValue)", "result": "\(confirmation)",
                ])
                if let nudge = submission.nudge { logger.warning("\(nudge.header): \(nudge.oneLine)") }
            case .refused(let refusal, _):
                logger.notice("button action rejected", metadata: [
                    "button": "\(name)", "gesture": "\(intent.gesture.rawValue)", "reason": "\(refusal.message)",
                ])
            }
            return submission.outcome
        } catch {
            logger.error("cannot record the button action", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Runs `expireGestures` at the recognizer's deadline, on the scheduling port. When the wall clock is set
    /// meanwhile, the deadline counts as reached: a gesture window is under two seconds, so resolving it at
    /// once is closer to the truth than waiting out a step of minutes or hours.
    private func scheduleExpiry(address: String, at deadline: Date) {
        let clock = self.clock
        // The recognizer decides strictly after its deadline: wake a millisecond past it.
        let wakeAt = deadline.addingTimeInterval(0.001)
        let task = Task { [weak self] in
            let wake = await clock.sleep(until: wakeAt)
            guard wake != .cancelled, let self else { return }
            self.expireGestures(address: address, at: max(clock.now(), wakeAt))
        }
        timers.withLock { $0.updateValue(task, forKey: address) }?.cancel()
    }

    private func intents(_ button: ButtonConfig, _ gestures: [RecognizedGesture]) -> [ButtonIntent] {
        gestures.map { ButtonIntent(button: button, buttonIndex: 0, gesture: $0.gesture, action: button.mapping.action(for: $0.gesture), at: $0.at) }
    }

    /// Keeps a button's battery as a sample of `button:<name>` (at most one per 10 minutes) and tells subscribers.
    func recordBattery(_ button: ButtonConfig, _ level: Int, at: Date) {
        guard observer == nil, let samples else { return }
        let due = lastBattery.withLock { last -> Bool in
            if let previous = last[button.address], at.timeIntervalSince(previous) < 600, at >= previous { return false }
            last[button.address] = at
            return true
        }
        guard due else { return }
        let clamped = Double(min(100, max(0, level)))
        do {
            try samples.appendLevel(source: button.powerSourceName, level: clamped, at: at)
            events?.publish(.buttonBattery(name: button.name, level: clamped))
        } catch {
            logger.error("cannot store the button battery", metadata: ["error": "\(error)"])
        }
    }
}
