import DoseTapCore
import Foundation
import Logging
import ServiceLifecycle

/// Plays the `battery-nudge` feedback (notification, sound and vibration per its settings) when the
/// risk to the alarm rises — safe → warning, warning → critical, safe → critical — once per step, never
/// twice for the same level. A falling risk (plugged in) plays nothing. Subscribes to the event bus.
public final class BatteryNudgeFeedback: Service, Sendable, CustomStringConvertible {
    public var description: String { "BatteryNudgeFeedback" }

    private let stream: AsyncStream<AgentEvent>
    private let play: @Sendable (Nudge) async -> Void

    /// Subscribes at once, so no risk published after this returns is missed.
    public init(events: EventBus, play: @escaping @Sendable (Nudge) async -> Void) {
        stream = events.subscribe()
        self.play = play
    }

    public convenience init(events: EventBus, feedback: FeedbackNotifier) {
        self.init(events: events) { nudge in
            await feedback.play(.batteryNudge, title: nudge.header, body: nudge.fullText)
        }
    }

    static func rank(_ nudge: Nudge?) -> Int {
        switch nudge?.severity {
        case nil: 0
        case .warning: 1
        case .critical: 2
        }
    }

    public func run() async throws {
        var last = 0
        for await event in stream.cancelOnGracefulShutdown() {
            guard case .batteryRisk(let nudge) = event else { continue }
            let rank = Self.rank(nudge)
            defer { last = rank }
            if rank > last, let nudge { await play(nudge) }
        }
    }
}
