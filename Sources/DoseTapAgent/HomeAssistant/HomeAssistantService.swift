import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Home Assistant over MQTT discovery (#16 §4, docs/home-assistant.md), on the household's one broker
/// connection (`HouseholdService` connects it, owns its last will and its heartbeat, which are the entities'
/// availability). It publishes, retained, a discovery config per entity and each state when it changes —
/// driven by the event bus, the database changing (the command line) and, while a night's window runs, the
/// minute on the scheduling port — and turns a press of an exposed button into the same inputs as every other
/// face: `DoseUseCases.submit(…, source: .mqtt)` and the ringing alarms' Stop/Snooze (`by: .mqtt`).
///
/// Everything from the broker is untrusted: a command topic this agent does not expose, a payload other than
/// exactly `PRESS`, or a retained press is dropped and logged once; a press is refused by the dose policy
/// like any input, and the answer goes to the log and to the "last command" sensor.
public final class HomeAssistantService: Service, Sendable, CustomStringConvertible {
    public var description: String { "HomeAssistantService" }

    /// Presses closer together than this are dropped (a flood cannot fill the log or the dose log).
    public static let pressInterval: TimeInterval = 1
    /// Retained discovery configs in our name followed at once, to withdraw those not wanted.
    static let configsKept = 1024

    private struct State {
        var connected = false
        /// Topic → the payload last published there, since the last (re)connection.
        var published: [String: [UInt8]] = [:]
        /// Discovery configs published (or found retained in our name), to withdraw those no longer wanted.
        var configs: Set<String> = []
        var battery: BatteryStatus?
        var lastPress: Date?
        /// Causes already logged: the most recent ones (a stranger on the broker can name new causes for ever).
        var logged = RecentKeys<String>(capacity: 1024)
    }

    private let settings: HomeAssistantSettings
    private let topics: HomeAssistantTopics
    private let client: MQTTClient
    private let tap: (messages: AsyncStream<MQTTMessage>, links: AsyncStream<Bool>)
    private let database: DoseTapDatabase
    private let doses: DoseUseCases
    private let alarms: any RingAnswering
    private let readBattery: @Sendable () -> BatteryStatus?
    private let stream: AsyncStream<AgentEvent>
    private let databaseChanges: AsyncStream<Void>?
    /// Whether the agent can write its data (#51): the "Cannot save data" problem sensor.
    private let storeHealth: StoreHealth?
    private let clock: any Scheduling
    private let logger: Logger
    private let loop: PlanningLoop
    private let state = Mutex(State())

    /// Subscribes to the events and taps the client at once: nothing published after this returns is missed.
    /// - Parameters:
    ///   - client: the household's client (`HouseholdLink.client`); this service never connects or closes it.
    ///   - alarms: every alarm that can ring here (`RingAnswers`).
    ///   - battery: the battery now, until the monitor's first reading arrives.
    public init(settings: HomeAssistantSettings, identity: HouseholdIdentity, client: MQTTClient, database: DoseTapDatabase,
                doses: DoseUseCases, alarms: any RingAnswering, battery: @escaping @Sendable () -> BatteryStatus?,
                events: EventBus, databaseChanges: AsyncStream<Void>?, storeHealth: StoreHealth? = nil, clock: any Scheduling, logger: Logger) {
        self.settings = settings
        topics = HomeAssistantTopics(prefix: settings.discoveryPrefix, identity: identity)
        self.client = client
        tap = client.tap(prefixes: [topics.base + "/", settings.discoveryPrefix + "/"])
        self.database = database
        self.doses = doses
        self.alarms = alarms
        readBattery = battery
        stream = events.subscribe()
        self.databaseChanges = databaseChanges
        self.storeHealth = storeHealth
        self.clock = clock
        self.logger = logger
        loop = PlanningLoop(clock: clock)
    }

    public var homeAssistantTopics: HomeAssistantTopics { topics }

    /// Look again now.
    public func poke() { loop.poke() }

    public func run() async throws {
        let messages = tap.messages
        let links = tap.links
        let stream = self.stream
        var tasks: [Task<Void, Never>] = []
        tasks.append(Task { [weak self] in
            for await message in messages { self?.receive(message) }
        })
        tasks.append(Task { [weak self] in
            for await up in links { self?.linkChanged(up) }
        })
        tasks.append(Task { [weak self] in
            for await event in stream { self?.follow(event) }
        })
        do {
            try client.subscribe(topics.commands + "#")
            try client.subscribe(topics.configs)
            // Home Assistant's birth message: it (re)started and wants the configs again.
            try client.subscribe("\(settings.discoveryPrefix)/status")
        } catch {
            logger.error("Home Assistant is off: cannot subscribe on the household broker", metadata: ["error": "\(error)"])
        }
        logger.notice("Home Assistant discovery on the household broker", metadata: [
            "prefix": "\(settings.discoveryPrefix)", "states": "\(topics.base)",
            "buttons": "\(settings.buttons.sorted().map(\.rawValue).joined(separator: ",").nonEmpty ?? "none")",
        ])
        await loop.run(databaseChanges: databaseChanges, events: nil, replanOn: { _ in false }, plan: { tick() })
        for task in tasks { task.cancel() }
    }

    // MARK: The broker

    private func linkChanged(_ up: Bool) {
        state.withLock { s in
            s.connected = up
            // A broker that restarted empty has lost every retained message: all of them again.
            if up { s.published = [:] }
        }
        poke()
    }

    func receive(_ message: MQTTMessage) {
        if message.topic.hasPrefix(topics.commands) {
            command(message)
        } else if message.topic == "\(settings.discoveryPrefix)/status" {
            if message.payload == Array("online".utf8) {
                logger.info("Home Assistant came online: publishing the discovery again")
                state.withLock { $0.published = [:] }
                poke()
            }
        } else if message.topic.hasPrefix(settings.discoveryPrefix + "/"), message.topic.hasSuffix("/config") {
            // A config retained in our node's name from an earlier run: the tick withdraws it when it is not wanted now.
            guard message.retained, !message.payload.isEmpty, message.topic.contains("/\(topics.node)/") else { return }
            // At most `configsKept` followed (a stranger can retain configs in our name without end); the rest stay
            // on the broker until a later start finds them.
            let known = state.withLock { s in s.configs.count < Self.configsKept && s.configs.insert(message.topic).inserted }
            if known { poke() }
        }
    }

    private func logOnce(_ key: String, _ text: @autoclosure () -> Logger.Message, metadata: Logger.Metadata = [:]) {
        let first = state.withLock { s -> Bool in
            return s.logged.insert(key)
        }
        if first { logger.warning(text(), metadata: metadata) }
    }

    private func command(_ message: MQTTMessage) {
        let name = String(message.topic.dropFirst(topics.commands.count))
        let shownTopic = DisplayText.escaped(message.topic, maxLength: 120)
        guard let button = HomeAssistantButton(rawValue: name), settings.buttons.contains(button) else {
            logOnce("topic|\(name.prefix(64))", "dropped a Home Assistant command for a button this agent does not expose",
                    metadata: ["topic": "\(shownTopic)"])
            return
        }
        guard !message.retained else {
            // A retained press would press again at every reconnection.
            logOnce("retained|\(name)", "dropped a retained Home Assistant press: presses must not be retained", metadata: ["topic": "\(shownTopic)"])
            return
        }
        guard message.payload == Array(HomeAssistantDiscovery.press.utf8) else {
            let shown = DisplayText.escaped(String(decoding: message.payload.prefix(40), as: UTF8.self), maxLength: 40)
            logOnce("payload|\(name)", "dropped a Home Assistant command whose payload is not \(HomeAssistantDiscovery.press)",
                    metadata: ["topic": "\(shownTopic)", "payload": "\(shown)", "bytes": "\(message.payload.count)"])
            return
        }
        let now = clock.now()
        let flood = state.withLock { s -> Bool in
            if let last = s.lastPress, now >= last, now.timeIntervalSince(last) < Self.pressInterval { return true }
            s.lastPress = now
            return false
        }
        guard !flood else {
            logOnce("flood|\(Int(now.timeIntervalSince1970 / 60))", "dropped Home Assistant presses less than a second apart")
            return
        }
        press(button)
    }

    /// One press, through the same use cases as every face.
    private func press(_ button: HomeAssistantButton) {
        let result: String
        switch button {
        case .take:
            result = submit(.take(confirmLate: false), button: button)
        case .snooze:
            if alarms.isRinging {
                result = answer(alarms.snooze(by: .mqtt), done: "Alarm snoozed", button: button)
            } else {
                result = submit(.snooze, button: button)
            }
        case .stop:
            if alarms.isRinging {
                result = answer(alarms.stop(by: .mqtt), done: "Alarm stopped", button: button)
            } else {
                result = "Refused: no alarm is ringing"
                logger.notice("Home Assistant press refused", metadata: ["button": "\(button.rawValue)", "reason": "no alarm is ringing"])
            }
        }
        publish(topics.state(HomeAssistantDiscovery.State.lastCommand), HomeAssistantDiscovery.stateText("\(HomeAssistantDiscovery.buttonName(button)): \(result)"))
        poke()
    }

    private func answer(_ done: Bool, done text: String, button: HomeAssistantButton) -> String {
        logger.notice(done ? "Home Assistant press answered the alarm" : "Home Assistant press came after the alarm ended",
                      metadata: ["button": "\(button.rawValue)"])
        return done ? text : "Refused: the alarm had already ended"
    }

    private func submit(_ command: DoseCommand, button: HomeAssistantButton) -> String {
        do {
            let submission = try doses.submit(command, source: .mqtt)
            switch submission.outcome {
            case .recorded(_, let confirmation, _):
                logger.notice("Home Assistant press recorded", metadata: ["button": "\(button.rawValue)", "result": "\(confirmation)"])
                if let nudge = submission.nudge { logger.warning("\(nudge.header): \(nudge.oneLine)") }
                return confirmation
            case .refused(let refusal, _):
                logger.notice("Home Assistant press refused", metadata: ["button": "\(button.rawValue)", "reason": "\(refusal.message)"])
                return "Refused: \(refusal.message)"
            }
        } catch {
            logger.error("cannot record the Home Assistant press", metadata: ["button": "\(button.rawValue)", "error": "\(error)"])
            return "Not recorded: \(error)"
        }
    }

    // MARK: What happened

    private func follow(_ event: AgentEvent) {
        switch event {
        case .batteryReading(let status, _):
            state.withLock { $0.battery = status }
            poke()
        case .doseRecorded, .settingsChanged, .configurationReloaded, .alarmRinging, .alarmEnded, .alarmMissed, .buttonBattery,
             .backupAlarmRinging, .backupAlarmEnded, .storeHealthChanged:
            poke()
        case .doseRefused, .reminderDue, .buttonPressed:
            break
        }
    }

    @discardableResult
    private func publish(_ topic: String, _ text: String) -> Bool {
        publish(topic, Array(text.utf8))
    }

    /// Publishes retained when it differs from what was published there since the last connection.
    @discardableResult
    private func publish(_ topic: String, _ payload: [UInt8]) -> Bool {
        let due = state.withLock { s -> Bool in
            guard s.connected, s.published[topic] != payload else { return false }
            s.published[topic] = payload
            return true
        }
        guard due else { return false }
        do {
            try client.publish(topic, payload, retain: true)
        } catch {
            state.withLock { _ = $0.published.removeValue(forKey: topic) }
            logOnce("publish|\(error)", "cannot publish to Home Assistant", metadata: ["error": "\(error)"])
        }
        return true
    }

    // MARK: The states

    /// Publishes every config and state that changed; returns when the night's numbers change next.
    private func tick() -> Date? {
        guard state.withLock({ $0.connected }) else { return nil }
        let now = clock.now()
        let buttons: [ButtonConfig]
        do {
            buttons = try ButtonRepository(database: database).all()
        } catch {
            logOnce("buttons", "cannot read the buttons for Home Assistant", metadata: ["error": "\(error)"])
            buttons = []
        }
        // Discovery: the wanted configs, and an empty retained config for each one no longer wanted.
        let entities = HomeAssistantDiscovery.entities(topics, buttons: settings.buttons, bleButtons: buttons)
        let wanted = Set(entities.map { topics.config($0.component, $0.object) })
        for entity in entities {
            let topic = topics.config(entity.component, entity.object)
            publish(topic, entity.config.text)
        }
        let stale = state.withLock { s -> [String] in
            let stale = s.configs.subtracting(wanted).sorted()
            s.configs = wanted
            return stale
        }
        for topic in stale {
            logger.info("Home Assistant entity withdrawn", metadata: ["topic": "\(DisplayText.escaped(topic, maxLength: 160))"])
            publish(topic, [UInt8]())
        }

        // Tonight.
        var next: Date?
        do {
            let night = try doses.repository.status(now: now, timeZone: clock.timeZone)
            publish(topics.state(HomeAssistantDiscovery.State.phase), night.phase.rawValue)
            publish(topics.state(HomeAssistantDiscovery.State.minutesLeft), night.minutesRemaining.map(String.init) ?? HomeAssistantDiscovery.unknown)
            if let session = night.session, session.isActive(at: now) {
                // The phase and the minutes change on whole minutes after Dose 1.
                let minutes = (session.elapsed(at: now) / 60).rounded(.down)
                next = session.dose1.at.addingTimeInterval((minutes + 1) * 60)
            }
        } catch {
            logOnce("night|\(error)", "cannot read tonight for Home Assistant", metadata: ["error": "\(error)"])
        }

        // The battery, and its risk at the next enabled alarm.
        let battery = state.withLock { $0.battery } ?? readBattery()
        if battery != nil { state.withLock { if $0.battery == nil { $0.battery = battery } } }
        let level = battery.flatMap { $0.state.present ? $0.state.level : nil }
        publish(topics.state(HomeAssistantDiscovery.State.battery), level.map { String(Int($0.rounded())) } ?? HomeAssistantDiscovery.unknown)
        do {
            let upcoming = try AlarmRepository(database: database).load().alarms.filter(\.enabled)
                .compactMap { $0.nextOccurrence(after: now, in: clock.timeZone) }.min()
            let risk = upcoming.flatMap { at in battery.flatMap { $0.forecast(at: at, now: now).risk } }
            publish(topics.state(HomeAssistantDiscovery.State.alarmRisk), HomeAssistantDiscovery.risk(risk, hasAlarm: upcoming != nil))
        } catch {
            logOnce("alarms|\(error)", "cannot read the alarms for Home Assistant", metadata: ["error": "\(error)"])
        }
        publish(topics.state(HomeAssistantDiscovery.State.alarmRinging), alarms.isRinging ? HomeAssistantDiscovery.on : HomeAssistantDiscovery.off)
        // Whether the data can be written (#51): the attributes first, so the sensor never turns on without its sentence.
        let problem = storeHealth?.problem
        publish(topics.state(HomeAssistantDiscovery.State.dataProblemAttributes),
                HomeAssistantDiscovery.dataProblemAttributes(problem, sentence: storeHealth?.sentence).text)
        publish(topics.state(HomeAssistantDiscovery.State.dataProblem), problem == nil ? HomeAssistantDiscovery.off : HomeAssistantDiscovery.on)

        // Each button's cell, as last heard.
        let levels = (try? BatterySampleRepository(database: database).latestLevels()) ?? [:]
        for button in buttons {
            let level = levels[button.powerSourceName]?.level
            publish(topics.state(HomeAssistantDiscovery.State.buttonBattery(button)), level.map { String(Int($0.rounded())) } ?? HomeAssistantDiscovery.unknown)
        }
        return next
    }
}

private extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
