import DoseTapAgent
import DoseTapApp
import DoseTapCore
import Foundation

extension AlarmCommand {
    /// "This machine may sleep through the alarm: <reason>. Fix: <fix>" after an answer that shows an enabled
    /// alarm, when nothing can wake the machine from suspend (docs/alarms.md), and "This machine cannot play
    /// the alarm: <reason>. Fix: <fix>" when nothing can make its sound (#32). Whose finding: the running
    /// agent's (it records it, `WakeStatusFile`), else this process's own check (`WakeCheck`). Text output:
    /// a line after the answer; `--json`: the line on standard error, so the pinned JSON shapes stay as they are.
    static func warnIfMaySleep(_ views: [AlarmView], json: Bool, location: some Locating) {
        guard views.contains(where: \.alarm.enabled) else { return }
        for warning in AlarmWarnings.lines(dataDirectory: location.paths.dataDirectory) {
            let line = DisplayText.escaped(warning, maxLength: 1000)
            if json {
                StandardOutput.error(line + "\n")
            } else {
                printLine(line)
            }
        }
    }
}
