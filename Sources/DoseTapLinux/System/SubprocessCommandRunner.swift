import DoseTapCore
import Foundation
import Subprocess
#if canImport(Glibc)
import Glibc
#endif

/// A one-line reason a command gave no output to use.
public struct CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// `CommandRunner` with swift-subprocess: the program is found on `PATH` (or given by path), never run
/// through a shell, in a process group of its own; at the timeout the whole group is killed (a script's
/// `sleep` as well, or its output pipe would stay open), and after every run whatever is left of the group
/// is killed too (a background child must not outlive the run, nor the agent). The timeout waits on the
/// scheduling port.
public struct SubprocessCommandRunner: CommandRunner {
    private let clock: any Scheduling
    public static let outputLimit = 64 * 1024

    public init(clock: any Scheduling) {
        self.clock = clock
    }

    public func output(of argv: [String], timeout: TimeInterval) async throws -> String {
        guard let program = argv.first, !program.isEmpty else { throw CommandError("no program to run") }
        let executable: Executable = program.contains("/") ? .path(.init(program)) : .name(program)
        var options = PlatformOptions()
        options.processGroupID = 0
        let clock = self.clock
        let output: String
        let status: TerminationStatus
        do {
            let result = try await Subprocess.run(executable, arguments: Arguments(Array(argv.dropFirst())), environment: .inherit,
                                              platformOptions: options, input: .none, output: .sequence, error: .discarded) { execution in
                let pid = execution.processIdentifier.value
                let timer = Task { () -> Bool in
                    // Elapsed time: a wall-clock step (NTP, a test setting the clock) does not end it early or never.
                    guard await clock.sleep(elapsing: .milliseconds(Int64((timeout * 1000).rounded()))) else { return false }
                    kill(-pid, SIGKILL)
                    return true
                }
                var bytes: [UInt8] = []
                for try await chunk in execution.standardOutput {
                    chunk.withUnsafeBytes { buffer in
                        bytes.append(contentsOf: buffer.prefix(max(0, Self.outputLimit - bytes.count)))
                    }
                }
                timer.cancel()
                return (String(decoding: bytes, as: UTF8.self), await timer.value, pid)
            }
            // The command is done (or killed): whatever it left behind in its group — a background child, a
            // daemon it started — ends with it, every run, or each interval would add more for ever. The group
            // outlives its leader only through such children, so its number cannot have been handed on.
            Self.endGroup(result.closureResult.2)
            if result.closureResult.1 {
                throw CommandError("\(program) ran longer than \(Int(timeout)) s and was killed")
            }
            output = result.closureResult.0
            status = result.terminationStatus
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("\(program) could not run: \(error)")
        }
        guard status.isSuccess else {
            throw CommandError("\(program) failed (\(status))")
        }
        return output
    }

    /// SIGKILL to what is left of process group `pgid` (ESRCH, none left, is the common case).
    static func endGroup(_ pgid: pid_t) {
        guard pgid > 1 else { return }
        kill(-pgid, SIGKILL)
    }
}
