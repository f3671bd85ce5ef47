import Foundation

enum Terminal {
    static let isTTY = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func colored(_ text: String, _ color: String) -> String {
        guard isTTY else { return text }
        let code = switch color {
        case "red": "\u{1B}[1;31m"
        case "orange": "\u{1B}[1;38;5;208m"
        default: ""
        }
        return code.isEmpty ? text : code + text + "\u{1B}[0m"
    }
}
