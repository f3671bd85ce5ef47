import ArgumentParser
import DoseTapLinux
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `dosetap wake-helper`: the system service that arms wake-ups for the users' agents (#28, `WakeHelper`).
/// Started by `dosetap-wake.socket` (socket activation: systemd hands over the listening socket), or, with
/// `--socket`, listening on a path of its own (tests, a machine without systemd).
struct WakeHelperCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wake-helper",
        abstract: "Arm wake-ups from suspend for the users' agents (the system service dosetap-wake; needs CAP_WAKE_ALARM).",
        discussion: """
        Run by systemd from dosetap-wake.socket, which hands over /run/dosetap-wake.sock. Each connection may hold \
        one wake-up (ARM <epoch seconds>, DISARM, CHECK; one line each); closing it clears the wake-up. Only root \
        and users with a login session or linger may use it. docs/alarms.md, "Waking from suspend".
        """
    )

    @Option(help: ArgumentHelp("Listen on this path instead of the socket systemd hands over.", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("Exit after this many seconds without a connection (0: never).", valueName: "seconds"))
    var idleExit: Int = 60

    @Option(help: ArgumentHelp("Where logind lists the users it tracks.", valueName: "directory"))
    var usersDirectory: String = WakeHelper.usersDirectory

    func validate() throws {
        guard (0...86_400).contains(idleExit) else {
            throw ValidationError("--idle-exit must be 0 to 86400 seconds, not \(idleExit)")
        }
        if let socket, socket.isEmpty || socket.utf8.count > 107 {
            throw ValidationError("--socket must be a path of 1 to 107 bytes")
        }
    }

    func run() throws {
        // SIGTERM (systemctl stop) ends it at once, whatever mask its starter left blocked: the kernel closes the
        // connections and their timers with the process.
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        let listener: Int32
        if let socket {
            listener = WakeHelper.listen(at: socket)
            guard listener >= 0 else {
                throw CLIError("cannot listen on \(oneLine(socket)): \(strerrorText(errno))")
            }
        } else {
            listener = try Self.activatedSocket()
        }
        var options = WakeHelperServer.Options(listener: listener)
        options.usersDirectory = usersDirectory
        options.idleExit = idleExit == 0 ? nil : .seconds(idleExit)
        // Without CAP_WAKE_ALARM the helper is useless: say so at once rather than refuse every client.
        let probe = LinuxWakeAlarm.alarmTimerFD()
        guard probe >= 0 else {
            throw CLIError("cannot make a CLOCK_REALTIME_ALARM timer: \(strerrorText(-probe)) (the service needs AmbientCapabilities=CAP_WAKE_ALARM)")
        }
        Glibc.close(probe)
        options.log("serving wake-ups on \(socket ?? "the socket systemd handed over")")
        WakeHelperServer(options).run()
    }

    /// The one listening socket of socket activation (`LISTEN_PID`, `LISTEN_FDS`: sd_listen_fds(3)).
    static func activatedSocket() throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 else {
            throw CLIError("no socket was handed over (start it with dosetap-wake.socket, or give --socket PATH)")
        }
        guard count == 1 else { throw CLIError("systemd handed over \(count) sockets; the helper takes exactly one") }
        let fd: Int32 = 3
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }
}
