import DoseTapAgent
import DoseTapCore
import Foundation

extension AlarmCommand {
    /// "This machine may sleep through the alarm: <reason>. Fix: <fix>" after an answer that shows an enabled
    /// alarm, when nothing can wake the machine from suspend (docs/alarms.md). Whose finding: the running
    /// agent's (it records it, `WakeStatusFile`), else this process's own check (`WakeCheck`). Text output:
    /// a line after the answer; `--json`: the line on standard error, so the pinned JSON shapes stay as they are.
    static func warnIfMaySleep(_ views: [AlarmView], json: Bool, location: some Locating) {
        guard views.contains(where: \.alarm.enabled),
              let problem = WakeCheck.problem(dataDirectory: location.paths.dataDirectory) else { return }
        let line = DisplayText.escaped(problem.message, maxLength: 1000)
        if json {
            StandardOutput.error(line + "\n")
        } else {
            printLine(line)
        }
    }
}
