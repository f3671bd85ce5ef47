import DoseTapApp
import DoseTapCore
import Foundation
import ServiceLifecycle

/// The loop of the agent's planners (`DoseScheduler`, `AlarmService`): plan, then wait — on the scheduling
/// port — for the instant the plan returned, a database change (the command line wrote), an event that
/// matters, a poke, or a clock step; plan again. Nothing polls: with nothing planned it waits for a change.
final class PlanningLoop: Sendable {
    private let clock: any Scheduling
    private let inputs: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init(clock: any Scheduling) {
        self.clock = clock
        (inputs, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(8))
    }

    /// Plan again now.
    func poke() { continuation.yield() }

    /// Runs until graceful shutdown (or cancellation). The wall-clock instant itself is waited for: a clock
    /// step (NTP at boot, a manual date change) wakes the wait at once to plan again, so nothing is late by
    /// the size of the step.
    func run(databaseChanges: AsyncStream<Void>?, events: EventBus?, replanOn: @escaping @Sendable (AgentEvent) -> Bool,
             plan: () async -> Date?) async {
        let continuation = self.continuation
        let pump = Task {
            guard let databaseChanges else { return }
            for await _ in databaseChanges { continuation.yield() }
        }
        let subscription = Task {
            guard let stream = events?.subscribe() else { return }
            for await event in stream where replanOn(event) { continuation.yield() }
        }
        var timer: Task<Void, Never>?
        defer {
            pump.cancel()
            subscription.cancel()
            timer?.cancel()
        }
        func arm(_ next: Date?) {
            timer?.cancel()
            timer = nil
            guard let next else { return }
            timer = Task { [clock] in
                if await clock.sleep(until: next) != .cancelled { continuation.yield() }
            }
        }
        arm(await plan())
        await withGracefulShutdownHandler {
            for await _ in inputs {
                arm(await plan())
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
    }
}
