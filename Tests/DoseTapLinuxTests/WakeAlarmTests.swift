import DoseTapCore
@testable import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The timers on `CLOCK_REALTIME_ALARM` (clockid 8) this process holds, as the kernel shows them in
/// `/proc/self/fdinfo`: descriptor → seconds until expiry (`it_value`).
func alarmTimers() -> [Int32: Int] {
    var out: [Int32: Int] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fdinfo")) ?? [] {
        guard let fd = Int32(name),
              let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
              target == "anon_inode:[timerfd]",
              let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(name)", encoding: .utf8) else { continue }
        let lines = info.split(separator: "\n")
        guard lines.contains(where: { $0.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "\t", with: "") == "clockid:8" }),
              let value = lines.first(where: { $0.hasPrefix("it_value:") }) else { continue }
        // it_value: (3599, 999912345)
        let digits = value.drop(while: { $0 != "(" }).dropFirst().prefix(while: { $0 != "," })
        out[fd] = Int(digits.trimmingCharacters(in: .whitespaces)) ?? -1
    }
    return out
}

/// Whether this process may make a CLOCK_REALTIME_ALARM timer. In CI (`CI=true`) the tests that need it
/// run anyway and fail without it: a skipped wake-up test is a hole.
let canWakeOrMustTry: Bool = {
    if ProcessInfo.processInfo.environment["CI"] == "true" { return true }
    if case .success = LinuxWakeAlarm(rtcPath: nil).capability() { return true }
    return false
}()

@Suite("Waking from suspend: LinuxWakeAlarm", .serialized)
struct WakeAlarmTests {
    @Test("a CLOCK_REALTIME_ALARM timerfd is armed for real at the instant, re-armed in place, closed on disarm",
          .enabled(if: canWakeOrMustTry, "this process lacks CAP_WAKE_ALARM (run as root, or CI=true to make it a failure)"))
    func alarmTimerForReal() throws {
        let wake = LinuxWakeAlarm(rtcPath: nil)
        #expect(wake.capability() == .success(.alarmTimer), "the test process needs CAP_WAKE_ALARM (root)")
        let before = alarmTimers()
        #expect(try wake.arm(at: Date().addingTimeInterval(3600)) == .alarmTimer)
        var added = alarmTimers().filter { before[$0.key] == nil }
        #expect(added.count == 1)
        #expect((3590...3600).contains(added.first?.value ?? -1), "\(added)")
        // Arming again replaces the wake-up: still one timer, now two hours away.
        try wake.arm(at: Date().addingTimeInterval(7200))
        added = alarmTimers().filter { before[$0.key] == nil }
        #expect(added.count == 1)
        #expect((7190...7200).contains(added.first?.value ?? -1), "\(added)")
        wake.disarm()
        #expect(alarmTimers().filter { before[$0.key] == nil }.isEmpty)
    }

    @Test("neither the capability nor an RTC: the exact message, from capability() and from arm()")
    func neitherAllowed() throws {
        let wake = LinuxWakeAlarm(rtcPath: "/nonexistent-rtc/wakealarm", makeTimer: { -EPERM }, helperSocket: nil)
        let expected = "This machine may sleep through the alarm: this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM timer "
            + "(Operation not permitted), and there is no RTC wake alarm at /nonexistent-rtc/wakealarm. Fix: give the agent "
            + "AmbientCapabilities=CAP_WAKE_ALARM (see docs/alarms.md), or keep the machine from suspending at night"
        guard case .failure(let problem) = wake.capability() else {
            Issue.record("expected no way to wake")
            return
        }
        #expect(problem.message == expected)
        #expect(throws: problem) { try wake.arm(at: Date().addingTimeInterval(60)) }
    }

    @Test("an RTC that is there but not writable: the udev rule is the fix")
    func rtcNotWritable() {
        let problem = LinuxWakeAlarm.unavailable(timerError: EPERM, rtcPath: "/sys/class/rtc/rtc0/wakealarm", rtcError: EACCES)
        #expect(problem.message == "This machine may sleep through the alarm: this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM "
            + "timer (Operation not permitted), and /sys/class/rtc/rtc0/wakealarm is not writable (Permission denied). Fix: install "
            + "udev-rules/72-dosetap-rtc-wakealarm.rules and add the agent's user to the dosetap group, or give the agent "
            + "AmbientCapabilities=CAP_WAKE_ALARM (see docs/alarms.md)")
    }

    @Test("without the timer, the RTC file gets the epoch seconds (cleared first); disarm writes 0")
    func rtcFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-rtc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("wakealarm")
        try Data("1700000000\n".utf8).write(to: file)
        let wake = LinuxWakeAlarm(rtcPath: file.path, makeTimer: { -EPERM }, helperSocket: nil)
        #expect(wake.capability() == .success(.rtc(path: file.path)))
        #expect(try wake.arm(at: Date(timeIntervalSince1970: 1_800_000_000.75)) == .rtc(path: file.path))
        #expect(try String(contentsOf: file, encoding: .utf8) == "1800000000\n")
        wake.disarm()
        #expect(try String(contentsOf: file, encoding: .utf8) == "0\n")
    }
}
