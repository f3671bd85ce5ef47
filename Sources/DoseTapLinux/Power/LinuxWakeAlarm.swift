internal import CLinuxTime
import DoseTapCore
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The wake-from-suspend port on Linux, in order of preference:
///
/// 1. a `timerfd` on `CLOCK_REALTIME_ALARM` — needs `CAP_WAKE_ALARM` (else `EPERM`); the kernel's alarm
///    timer programs the RTC itself and the wake-up lasts while this process keeps the descriptor open;
/// 2. the system's wake helper (`dosetap wake-helper` behind `/run/dosetap-wake.sock`, shipped by the package
///    and `make install-wake`; `WakeHelper`): it holds the timer for this process while the connection stays
///    open — what an install as shipped uses, since the user unit holds no capability (#28);
/// 3. the RTC's `wakealarm` file (`/sys/class/rtc/rtc0/wakealarm`, writable through
///    `udev-rules/72-dosetap-rtc-wakealarm.rules`): "0" to clear, then the epoch seconds;
/// 4. none: `WakeUnavailable`, saying which failed and why, and the one-line fix.
///
/// One wake-up at a time: arming again replaces it. Thread-safe.
public final class LinuxWakeAlarm: WakeAlarm {
    public static let defaultRTCPath = "/sys/class/rtc/rtc0/wakealarm"
    public static let udevRule = "udev-rules/72-dosetap-rtc-wakealarm.rules"

    /// Makes a `CLOCK_REALTIME_ALARM` timerfd: the descriptor (owned by the caller), or `-errno`.
    public typealias TimerFactory = @Sendable () -> Int32

    /// The machine's: `timerfd_create(CLOCK_REALTIME_ALARM, TFD_NONBLOCK | TFD_CLOEXEC)`.
    public static let alarmTimerFD: TimerFactory = {
        let fd = dosetap_timerfd_create(1)
        return fd >= 0 ? fd : -errno
    }

    private struct State {
        /// The armed alarm timer (closing it disarms).
        var timer: Int32 = -1
        /// Whether this process wrote a wake time to the RTC.
        var rtcArmed = false
        /// The connection to the wake helper that holds this process's wake-up (closing it clears it).
        var helper: Int32 = -1
    }

    /// The helper's socket: `$DOSETAP_WAKE_SOCKET` when set (tests, a helper elsewhere), else `WakeHelper.socketPath`.
    public static var defaultHelperSocket: String { WakeHelperClient.defaultSocket }
    static var helperTimeout: Duration { WakeHelperClient.timeout }

    private let rtcPath: String?
    private let makeTimer: TimerFactory?
    private let helperSocket: String?
    private let state = Mutex(State())

    /// - Parameters:
    ///   - rtcPath: the RTC's `wakealarm` file; nil: do not use an RTC.
    ///   - makeTimer: how to make the alarm timer; nil: do not use one (tests inject a refusal).
    ///   - helperSocket: the wake helper's socket; nil: do not use the helper.
    public init(rtcPath: String? = LinuxWakeAlarm.defaultRTCPath, makeTimer: TimerFactory? = LinuxWakeAlarm.alarmTimerFD,
                helperSocket: String? = LinuxWakeAlarm.defaultHelperSocket) {
        self.rtcPath = rtcPath
        self.makeTimer = makeTimer
        self.helperSocket = helperSocket
    }

    deinit {
        state.withLock { s in
            if s.timer >= 0 { _ = Glibc.close(s.timer) }
            if s.helper >= 0 { _ = Glibc.close(s.helper) }
        }
    }

    private static func askHelper(_ socket: String, _ request: String) -> WakeHelperClient.ExchangeFailure? {
        WakeHelperClient.ask(socket, request)
    }

    static func helperConnectError(_ socket: String, _ code: Int32) -> String { WakeHelperClient.connectError(socket, code) }

    /// Why the helper cannot be used, as a reason clause.
    static func helperReason(_ failure: WakeHelperClient.ExchangeFailure, socket: String) -> String {
        WakeHelperClient.reason(failure, socket: socket)
    }

    // MARK: The port

    public func capability() -> Result<WakeMethod, WakeUnavailable> {
        let timerError: Int32?
        if let makeTimer {
            let fd = makeTimer()
            if fd >= 0 {
                _ = Glibc.close(fd)
                return .success(.alarmTimer)
            }
            timerError = -fd
        } else {
            timerError = nil
        }
        var helperError: String?
        if let helperSocket {
            guard let failure = Self.askHelper(helperSocket, "CHECK") else { return .success(.helper(socket: helperSocket)) }
            helperError = Self.helperReason(failure, socket: helperSocket)
        }
        let rtcError = rtcPath.map { path -> Int32 in
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { return errno }
            _ = Glibc.close(fd)
            return 0
        }
        if let rtcPath, rtcError == 0 { return .success(.rtc(path: rtcPath)) }
        return .failure(Self.unavailable(timerError: timerError, helperError: helperError, rtcPath: rtcPath, rtcError: rtcError))
    }

    @discardableResult
    public func arm(at date: Date) throws -> WakeMethod {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let nanoseconds = Int64(((date.timeIntervalSince1970 - seconds) * 1e9).rounded(.down))
        return try state.withLock { s throws -> WakeMethod in
            var timerError: Int32?
            if let makeTimer {
                if s.timer < 0 {
                    let fd = makeTimer()
                    if fd >= 0 { s.timer = fd } else { timerError = -fd }
                }
                if s.timer >= 0 {
                    guard dosetap_timerfd_arm(s.timer, Int64(seconds), max(0, min(999_999_999, nanoseconds))) == 0 else {
                        let reason = Self.text(errno)
                        _ = Glibc.close(s.timer)
                        s.timer = -1
                        throw WakeArmError(description: "cannot arm the CLOCK_REALTIME_ALARM timer: \(reason)")
                    }
                    if s.rtcArmed, let rtcPath {
                        // An earlier wake-up went to the RTC: the alarm timer owns it now.
                        try? Self.write("0", to: rtcPath)
                        s.rtcArmed = false
                    }
                    return .alarmTimer
                }
            }
            var helperError: String?
            if let helperSocket {
                switch armThroughHelper(&s, socket: helperSocket, seconds: Int64(seconds)) {
                case nil:
                    if s.rtcArmed, let rtcPath {
                        try? Self.write("0", to: rtcPath)
                        s.rtcArmed = false
                    }
                    return .helper(socket: helperSocket)
                case .refused(let why)? where WakeHelper.RequestError.isAboutTime(why):
                    // The helper is there and said no to this time: that is an arming error, not a missing way.
                    throw WakeArmError(description: "the wake helper refused the wake-up: \(why)")
                case let failure?:
                    // Refused for who this is or a limit, gone, or silent: no way through the helper (the RTC next).
                    helperError = Self.helperReason(failure, socket: helperSocket)
                }
            }
            guard let rtcPath else {
                throw Self.unavailable(timerError: timerError, helperError: helperError, rtcPath: nil, rtcError: nil)
            }
            // The kernel refuses a new time while one is set (EBUSY): clear first.
            do {
                try Self.write("0", to: rtcPath)
            } catch let error as WakeArmError where [ENOENT, ENOTDIR, EACCES, EPERM, EROFS].contains(error.code) {
                throw Self.unavailable(timerError: timerError, helperError: helperError, rtcPath: rtcPath, rtcError: error.code)
            }
            try Self.write(String(Int64(seconds)), to: rtcPath)
            s.rtcArmed = true
            return .rtc(path: rtcPath)
        }
    }

    public func disarm() {
        state.withLock { s in
            if s.timer >= 0 {
                _ = Glibc.close(s.timer)
                s.timer = -1
            }
            if s.helper >= 0 {
                // Closing the connection clears the helper's wake-up for it.
                _ = Glibc.close(s.helper)
                s.helper = -1
            }
            if s.rtcArmed, let rtcPath {
                try? Self.write("0", to: rtcPath)
                s.rtcArmed = false
            }
        }
    }

    /// `ARM` on the connection this process keeps to the helper (made now if there is none, made again once
    /// if the helper went away since — it restarts on demand). nil: armed.
    private func armThroughHelper(_ s: inout State, socket: String, seconds: Int64) -> WakeHelperClient.ExchangeFailure? {
        for attempt in 0..<2 {
            if s.helper < 0 {
                let fd = dosetap_unix_connect(socket)
                guard fd >= 0 else { return .lost(Self.helperConnectError(socket, errno)) }
                s.helper = fd
            }
            let failure = WakeHelperClient.exchange(s.helper, "ARM \(seconds)", timeout: Self.helperTimeout)
            guard case .lost = failure else { return failure }
            _ = Glibc.close(s.helper)
            s.helper = -1
            if attempt == 1 { return failure }
        }
        return nil
    }

    // MARK: Texts

    /// The plain reason (which of the two failed and why) and the one-line fix.
    static func unavailable(timerError: Int32?, helperError: String? = nil, rtcPath: String?, rtcError: Int32?) -> WakeUnavailable {
        var reasons: [String] = []
        if let timerError {
            reasons.append(timerError == EPERM
                ? "this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM timer (\(text(EPERM)))"
                : "CLOCK_REALTIME_ALARM timers are unavailable (\(text(timerError)))")
        }
        if let helperError { reasons.append(helperError) }
        var rtcPresent = false
        if let rtcPath, let rtcError {
            switch rtcError {
            case ENOENT, ENOTDIR: reasons.append("there is no RTC wake alarm at \(rtcPath)")
            case EACCES, EPERM, EROFS:
                rtcPresent = true
                reasons.append("\(rtcPath) is not writable (\(text(rtcError)))")
            default:
                rtcPresent = true
                reasons.append("\(rtcPath) cannot be opened (\(text(rtcError)))")
            }
        }
        if reasons.isEmpty { reasons.append("no way to wake it was tried") }
        let fix: String
        if helperError != nil, !(timerError == nil && rtcPresent) {
            fix = "start the wake helper that the package installs: sudo systemctl enable --now dosetap-wake.socket (from source: sudo make install-wake; see docs/alarms.md)"
        } else if rtcPresent {
            fix = "install \(udevRule) and add the agent's user to the dosetap group, or give the agent AmbientCapabilities=CAP_WAKE_ALARM (see docs/alarms.md)"
        } else if timerError == EPERM {
            fix = "give the agent AmbientCapabilities=CAP_WAKE_ALARM (see docs/alarms.md), or keep the machine from suspending at night"
        } else {
            fix = "keep the machine from suspending at night (see docs/alarms.md)"
        }
        return WakeUnavailable(reason: reasons.joined(separator: ", and "), fix: fix)
    }

    static func text(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Writes `text` to a sysfs attribute in one `write` (as `echo text > file` does).
    static func write(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw WakeArmError(code: code, description: "cannot open \(path): \(Self.text(code))")
        }
        defer { _ = Glibc.close(fd) }
        let bytes = Array((text + "\n").utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            let code = written < 0 ? errno : EIO
            throw WakeArmError(code: code, description: "cannot write \(text) to \(path): \(Self.text(code))")
        }
    }
}

/// Arming a wake-up failed although a way to wake the machine exists (the RTC refused the time, …).
public struct WakeArmError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int32 = 0
    public var description: String
}
