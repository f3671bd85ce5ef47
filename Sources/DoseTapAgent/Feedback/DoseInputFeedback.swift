import DoseTapApp
import DoseTapCore
import Foundation
import Logging
import ServiceLifecycle

/// Answers a person who acted in the dark: a dose input from a button or a notification action is played
/// back as "dose recorded" (with the battery-at-reminder nudge after a Dose 1 on a draining battery) or
/// "action rejected" (with the rule's message). Subscribes to the event bus, so every face that submits
/// through `DoseUseCases` gets the same answer; the command line prints instead, and the agent's own
/// automatic records (source `agent`) play nothing.
public final class DoseInputFeedback: Service, Sendable, CustomStringConvertible {
    public var description: String { "DoseInputFeedback" }

    /// What is played for one event.
    public struct Cue: Sendable, Equatable {
        public var event: FeedbackEvent
        public var title: String
        public var body: String

        public init(event: FeedbackEvent, title: String, body: String) {
            self.event = event
            self.title = title
            self.body = body
        }
    }

    /// The sources a person uses away from a terminal.
    public static let answered: Set<InputSource> = [.button, .notification, .web, .mqtt]

    private let stream: AsyncStream<AgentEvent>
    private let play: @Sendable (Cue) async -> Void

    /// Subscribes at once, so no input decided after this returns is missed.
    public init(events: EventBus, play: @escaping @Sendable (Cue) async -> Void) {
        stream = events.subscribe()
        self.play = play
    }

    public convenience init(events: EventBus, feedback: FeedbackNotifier) {
        self.init(events: events) { cue in
            await feedback.play(cue.event, title: cue.title, body: cue.body)
        }
    }

    /// The cue of one event, or nil when it is not an answered dose input.
    public static func cue(for event: AgentEvent) -> Cue? {
        switch event {
        case .doseRecorded(let dose, let confirmation, _, let nudge) where answered.contains(dose.source):
            return Cue(event: .doseRecorded, title: confirmation, body: nudge?.fullText ?? "")
        case .doseRefused(let refusal, let source) where answered.contains(source):
            return Cue(event: .actionRejected, title: refusal.message, body: "")
        default:
            return nil
        }
    }

    public func run() async throws {
        for await event in stream.cancelOnGracefulShutdown() {
            if let cue = Self.cue(for: event) { await play(cue) }
        }
    }
}
