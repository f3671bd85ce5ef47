import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapHTTP
import DoseTapLinux
import DoseTapStore
import DoseTapWeb
import Foundation
import Synchronization

/// `dosetap status`: tonight and the next alarm at a glance, for a person or a status bar (docs/status-bar.md).
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Tonight's dose window and the next alarm at a glance, for you or a status bar (waybar, i3blocks).",
        discussion: """
            text: the glance and its details. json: the same as an object. waybar: one JSON line for a custom \
            module with "return-type": "json" (text, alt, tooltip, class). i3blocks: one JSON line for a block \
            with format=json (full_text, short_text, color, urgent). With --follow a new line is printed on \
            every change: at each event of the running agent (its event stream on its socket, nothing is \
            polled) and when a minute of the countdown passes. It ends when the program that started it exits \
            (a status bar: run it with exec, as in docs/status-bar.md) or at the first line it cannot write.
            """)

    typealias Format = StatusGlance.Format

    @Option(help: ArgumentHelp("The output.", valueName: "format")) var format: Format = .text
    @Flag(help: "Keep printing a line on every change (needs the running agent).") var follow = false
    @OptionGroup var location: DataOptions

    func glance() throws -> StatusGlance {
        let store = DataStore(directory: location.paths.dataDirectory)
        let night = try failing { try DoseHistory(store: store, clock: SystemClock()).status() }
        let nudge = (try? MachinePorts.doses(store: store, clock: SystemClock()))?.reminderNudge(for: night)
        let alarms = (try? AlarmCommand.useCases(location).list().alarms) ?? []
        return StatusGlance.make(night: night, nextAlarm: StatusGlance.nextAlarm(alarms), reminderNudge: nudge,
                                 storeProblem: AgentRecord.storeProblem(dataDirectory: location.paths.dataDirectory.path))
    }

    func render(_ glance: StatusGlance) -> String { glance.rendered(format) }

    func run() async throws {
        guard follow else {
            printLine(render(try glance()))
            return
        }
        guard let socket = WebFace.socketPath() else {
            throw CLIError("--follow needs $XDG_RUNTIME_DIR, where the running agent's socket is")
        }
        let pokes = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let failure = Mutex<(any Error)?>(nil)
        let events = AgentEventFollower.events(socketPath: socket)
        let follower = Task {
            do {
                for try await _ in events { pokes.continuation.yield() }
            } catch {
                failure.withLock { $0 = error }
            }
            pokes.continuation.finish()
        }
        // The reader is gone when the program that started us is (a status bar exits, and nothing is written
        // until the line next changes): end with it, as at the first write that fails.
        let orphaned = Task {
            if await ParentProcess.exited() { pokes.continuation.finish() }
        }
        defer {
            follower.cancel()
            orphaned.cancel()
        }
        var last: String?
        var timer: Task<Void, Never>?
        for await _ in pokes.stream {
            let current = try glance()
            let line = render(current)
            if line != last {
                printLine(line)
                last = line
                if StandardOutput.outcome.failure != nil { break }  // the bar went away
            }
            // The countdown moves on its own: one timer, on the scheduling port, for the next change.
            timer?.cancel()
            if let next = current.nextChange {
                timer = Task {
                    if await TimerFDScheduler.shared.sleep(until: next.addingTimeInterval(0.05)) != .cancelled {
                        pokes.continuation.yield()
                    }
                }
            }
        }
        timer?.cancel()
        if let error = failure.withLock({ $0 }) { throw CLIError("\(error)") }
    }
}

extension StatusGlance.Format: ExpressibleByArgument {}
