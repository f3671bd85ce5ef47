// The installed `dosetap` (#29): a small executable that answers the one-shot commands a status bar or a
// script calls often, and hands every other command line to the full program, unchanged, with execv.
//
// It links DoseTapCore, the presenters, the store's format and SQLite's C API, the system's time zone — no
// ArgumentParser, no GRDB, no server stacks, no D-Bus or udev — so it
// starts in a few milliseconds (docs/performance.md, "One-shot commands beside sqlite3"). It answers a
// command line only when it is one of the shapes below, exactly as the full program would read it, and only
// when the answer is a success; anything else (help, a usage error, a value out of range, an unknown
// option) is the full program's to answer, so every message and exit status stays its own. A differential
// test (FrontTests) holds the two to the same bytes.
import CFrontDispatch
import DoseTapCore
import DoseTapPresenters
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the front answers itself: the line to print (and the warnings before it), or nil (the full program answers).
enum FrontAnswer {
    static func answer(_ arguments: [String]) -> FrontReply? {
        guard let command = arguments.first else { return nil }
        let second = arguments.dropFirst().first
        switch command {
        case "predict": return predict(Array(arguments.dropFirst())).map { FrontReply(out: $0) }
        case "dose" where second == "status": return FrontDoseStatus.answer(Array(arguments.dropFirst(2))).map { FrontReply(out: $0) }
        case "alarm" where second == "list": return FrontAlarms.list(Array(arguments.dropFirst(2)))
        case "status": return FrontStatus.answer(Array(arguments.dropFirst()))
        default: return nil
        }
    }

    /// `predict --level N --drain N --hours N [--charging] --json`, in any order, each at most once, a value
    /// as the next word or after `=`. The numbers are read by the rule every face uses (PlainNumberText).
    static func predict(_ words: [String]) -> String? {
        guard let words = FrontWords(words, flags: ["--charging", "--json"], options: ["--level", "--drain", "--hours"]),
              words.flags.contains("--json"), let level = words.value("--level").flatMap(PlainNumberText.parse),
              let drain = words.value("--drain").flatMap(PlainNumberText.parse),
              let hours = words.value("--hours").flatMap(PlainNumberText.parse) else { return nil }
        let input = RiskInput(level: level, drainPercentPerHour: drain, hours: hours, charging: words.flags.contains("--charging"))
        guard let prediction = try? RiskPredictor.predict(input) else { return nil }
        return prediction.json.text
    }
}

func writeAll(_ fd: Int32, _ text: String) -> Int32? {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 {
            if errno == EINTR { continue }
            return errno
        }
        if n == 0 { return EIO }
        offset += n
    }
    return nil
}

let arguments = CommandLine.arguments
if let reply = FrontAnswer.answer(Array(arguments.dropFirst())) {
    // As the full program: a reader that went away is an error to report, not a signal that kills.
    signal(SIGPIPE, SIG_IGN)
    // The warnings first, as the full program writes them (standard error, before the answer).
    for warning in reply.err { _ = writeAll(STDERR_FILENO, warning + "\n") }
    if let failure = writeAll(STDOUT_FILENO, reply.out + "\n") {
        _ = writeAll(STDERR_FILENO, "dosetap: standard output could not be written (\(String(cString: strerror(failure))))\n")
        exit(1)
    }
    exit(0)
}

// Not answered here after all: the full program's (CFrontDispatch already handed over every other command line
// before the runtime started).
exit(dosetap_front_run_full(CommandLine.unsafeArgv))
