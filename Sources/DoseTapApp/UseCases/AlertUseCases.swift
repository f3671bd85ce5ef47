import DoseTapCore
import DoseTapStore
import Foundation

/// A source as `alerts show` lists it: its usage now, the thresholds that apply, on or off, its state.
public struct AlertSourceView: Sendable, Equatable {
    public var name: String
    public var kind: AlertSourceReading.Kind
    /// Percent used now (or last read); nil when never read.
    public var usage: Double?
    public var thresholds: AlertThresholds
    public var enabled: Bool
    /// ok, warning, critical or unreadable.
    public var state: String
}

/// The alert screen: the global settings and every source.
public struct AlertOverview: Sendable, Equatable {
    public var settings: AlertSettings
    public var sources: [AlertSourceView]
}

/// Usage alerts as every face reads and changes them (#13): thresholds, per-source overrides, snooze,
/// templates and history. Changes are validated, stored, and published as `.settingsChanged`.
public struct AlertUseCases: Sendable {
    private let store: DataStore
    private let clock: any WallClock
    private let supplies: @Sendable () -> [PowerSupplyReading]
    private let events: EventBus?
    private let commands: [String]

    /// - Parameters:
    ///   - supplies: the power supplies now (the machine's through udev; none when udev cannot be read).
    ///   - commands: the names of the `[[alerts.command]]` sources of config.toml (listed before their first
    ///     run, with the usage the agent last read).
    public init(store: DataStore, clock: any WallClock,
                supplies: @escaping @Sendable () -> [PowerSupplyReading], events: EventBus? = nil, commands: [String] = []) {
        self.store = store
        self.clock = clock
        self.supplies = supplies
        self.events = events
        self.commands = commands
    }

    /// The sources that can be read now: batteries among the power supplies, and the buttons' cells.
    public func readings() throws -> [AlertSourceReading] {
        let buttons = try store.openForReading().map { try BatterySampleRepository(database: $0).latestLevels().mapValues(\.level) } ?? [:]
        return AlertSourceReading.from(supplies: supplies(), buttonLevels: buttons)
    }

    /// Everything `alerts show` prints. A source known before (an override, a state) but absent now is
    /// listed with its last usage.
    public func overview() throws -> AlertOverview {
        let readings = try readings()
        let repository = try store.openForReading().map { AlertRepository(database: $0) }
        let settings = try repository?.settings() ?? AlertSettings()
        let overrides = try repository?.overrides() ?? [:]
        let states = try repository?.states() ?? [:]
        var sources: [AlertSourceView] = []
        func view(_ name: String, _ kind: AlertSourceReading.Kind, _ usage: Double?) -> AlertSourceView {
            let own = overrides[name] ?? AlertSourceOverride()
            let thresholds = (try? own.effective(settings.thresholds)) ?? settings.thresholds
            let state = states[name] ?? AlertSourceState()
            return AlertSourceView(name: name, kind: kind, usage: usage ?? state.usage, thresholds: thresholds, enabled: own.enabled,
                                   state: own.enabled ? AlertRules.state(usage: usage, state: state, thresholds: thresholds) : "off")
        }
        for reading in readings { sources.append(view(reading.name, reading.kind, reading.usage)) }
        for name in commands where !readings.contains(where: { $0.name == name }) {
            sources.append(view(name, .command, nil))
        }
        let present = Set(readings.map(\.name)).union(commands)
        for name in Set(overrides.keys).union(states.keys).subtracting(present).sorted() {
            sources.append(view(name, name.hasPrefix("button:") ? .button : .system, nil))
        }
        return AlertOverview(settings: settings, sources: sources)
    }

    // MARK: Input, as every face checks it (the messages of `dosetap alerts …`)

    /// A percentage threshold as typed: a whole number in ASCII digits, or nil.
    public static func percent(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 3, text.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return Int(text)
    }

    /// The ranges of the thresholds given (whether warning stays below critical with what is stored is the
    /// use case's to say): "warning (N %) must be between 10 and 99 % used", ….
    public static func checkRanges(warning: Int?, critical: Int?) throws {
        if let warning, !AlertThresholds.warningRange.contains(warning) {
            throw UseCaseError("warning (\(warning) %) must be between 10 and 99 % used")
        }
        if let critical, !AlertThresholds.criticalRange.contains(critical) {
            throw UseCaseError("critical (\(critical) %) must be between 5 and 95 % used")
        }
        if let warning, let critical, warning >= critical {
            throw UseCaseError("warning (\(warning) %) must be lower than critical (\(critical) %)")
        }
    }

    /// 15m, 1h, 4h, 24h, or off (nil).
    public static func snoozeDuration(_ text: String) throws -> AlertSnooze? {
        if text == "off" { return nil }
        guard let duration = AlertSnooze(rawValue: text) else {
            throw UseCaseError("invalid snooze '\(DisplayText.escaped(text, maxLength: 4096, doublingBackslashes: false))': use 15m, 1h, 4h, 24h or off")
        }
        return duration
    }

    /// `alerts set`: either threshold or both; every source's own thresholds must still make a pair.
    public func setThresholds(warning: Int?, critical: Int?) throws -> AlertSettings {
        try change { repository, settings in
            let thresholds = try valid { try AlertThresholds(warning: warning ?? settings.thresholds.warning,
                                                             critical: critical ?? settings.thresholds.critical) }
            for (name, own) in try repository.overrides().sorted(by: { $0.key < $1.key }) {
                do { _ = try own.effective(thresholds) } catch let error as AlertError {
                    throw UseCaseError("\(DisplayText.escaped(name)): \(error.description) (its own threshold; change it first: dosetap alerts source)")
                }
            }
            settings.thresholds = thresholds
        }
    }

    /// What `alerts source NAME` may change.
    public enum SourceChange: Sendable, Equatable {
        case warning(Int)
        case critical(Int)
        case enable
        case disable
        case reset
    }

    /// `alerts source NAME …`: a source that exists now, or one with settings or a state already.
    public func changeSource(_ name: String, _ changes: [SourceChange]) throws -> AlertSourceView {
        let database = try store.open()
        let repository = AlertRepository(database: database)
        let known = Set(try readings().map(\.name)).union(commands).union(try repository.overrides().keys).union(try repository.states().keys)
        guard known.contains(name) else {
            throw UseCaseError.notFound("no source '\(DisplayText.escaped(name, maxLength: 80))': see dosetap alerts show")
        }
        let settings = try repository.settings()
        var own = try repository.overrides()[name] ?? AlertSourceOverride()
        for change in changes {
            switch change {
            case .warning(let n): own.warning = n
            case .critical(let n): own.critical = n
            case .enable: own.enabled = true
            case .disable: own.enabled = false
            case .reset: own = AlertSourceOverride()
            }
        }
        _ = try valid { try own.effective(settings.thresholds) }
        try saving { try repository.setOverride(name, own) }
        guard let view = try overview().sources.first(where: { $0.name == name }) else { throw UseCaseError.notFound("no source '\(name)'") }
        return view
    }

    /// `alerts snooze 15m|1h|4h|24h` (nil: `off`). Returns when it ends (nil when off).
    @discardableResult
    public func snooze(_ duration: AlertSnooze?) throws -> Date? {
        let until = duration.map { clock.now().addingTimeInterval($0.seconds) }
        _ = try change { _, settings in settings.snoozedUntil = until }
        return until
    }

    /// `alerts template warning|critical TEXT` (nil text: back to the default).
    public func setTemplate(_ level: AlertLevel, _ text: String?) throws -> AlertTemplate {
        let template = try text.map { text in try valid { try AlertTemplate(text) } } ?? AlertTemplate.defaultText(level)
        _ = try change { _, settings in
            if level == .warning { settings.warningTemplate = template } else { settings.criticalTemplate = template }
        }
        return template
    }

    /// The history, newest first (at most 100 kept).
    public func history() throws -> [AlertRecord] {
        guard let database = try store.openForReading() else { return [] }
        return try AlertRepository(database: database).history()
    }

    /// Forgets the history; returns how many entries went.
    public func clearHistory() throws -> Int {
        guard let database = try store.openIfPresent() else { return 0 }
        return try saving { try AlertRepository(database: database).clearHistory() }
    }

    private func change(_ body: (AlertRepository, inout AlertSettings) throws -> Void) throws -> AlertSettings {
        let repository = AlertRepository(database: try store.open())
        var settings = try repository.settings()
        try body(repository, &settings)
        let changed = settings
        try saving { try repository.save(changed) }
        return settings
    }

    private func valid<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as AlertError { throw UseCaseError(error.description) }
    }

    private func saving<T>(_ body: () throws -> T) throws -> T {
        let result: T
        do { result = try body() } catch { throw UseCaseError.unavailable("could not save the alert settings: \(error)") }
        events?.publish(.settingsChanged)
        return result
    }
}
