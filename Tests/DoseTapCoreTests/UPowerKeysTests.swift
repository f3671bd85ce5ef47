@testable import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// UPower's key files are read byte by byte since #29 (the grapheme walk cost a one-shot command a million
/// instructions). The old Character-by-Character reader is kept here as the reference: on any text made of the
/// pieces a key file has — and the ones a hostile one adds — the two must find the same keys and notes.
@Suite("UPower key files: read byte by byte as they were read Character by Character")
struct UPowerKeysTests {
    static func reference(_ file: UPowerConfiguration.File, notes: inout [String]) -> [(String, String)] {
        func trimmed(_ s: Substring) -> Substring {
            var end = s.endIndex
            while end > s.startIndex {
                let before = s.index(before: end)
                guard s[before] == " " || s[before] == "\t" || s[before] == "\r" else { break }
                end = before
            }
            return s[s.startIndex..<end]
        }
        var result: [(String, String)] = []
        var group: String?
        var seen: Set<String> = []
        for (number, raw) in file.text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let line = trimmed(raw.drop(while: { $0 == " " || $0 == "\t" }))
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count >= 3 else {
                    notes.append("\(file.name): line \(number + 1) ignored (not a group, a key or a comment)")
                    continue
                }
                group = String(line.dropFirst().dropLast())
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                notes.append("\(file.name): line \(number + 1) ignored (not a group, a key or a comment)")
                continue
            }
            let key = String(trimmed(line[..<equals]))
            let value = String(line[line.index(after: equals)...].drop(while: { $0 == " " || $0 == "\t" }))
            guard group == "UPower", !key.isEmpty, !key.contains("[") else { continue }
            if !seen.insert(key).inserted {
                notes.append("\(file.name): \(key) is set more than once; the last one counts, as UPower reads it")
            }
            result.append((key, value))
        }
        return result
    }

    static let pieces = ["[UPower]", "[Other]", "[", "[]", "[é]", "]", "PercentageAction", "PercentageLow", "=", " ", "\t", "\r", "\n", "\r\n",
                         "2", "7.5", "-1", "#", "# comment", "UsePercentageForPolicy=true", "CriticalPowerAction=PowerOff", "é", "x[1]", "\u{0}"]

    @Test("any text of key-file pieces: the same keys, values and notes as the Character reader")
    func sameAsCharacters() async {
        await propertyCheck(count: 3000, input: Gen.int(in: 0...(Self.pieces.count - 1)).array(of: 0...30)) { picks in
            let file = UPowerConfiguration.File(name: "UPower.conf", text: picks.map { Self.pieces[$0] }.joined())
            var ours: [String] = []
            var theirs: [String] = []
            let a = UPowerConfiguration.keys(of: file, notes: &ours)
            let b = Self.reference(file, notes: &theirs)
            #expect(a.map { "\($0.0)=\($0.1)" } == b.map { "\($0.0)=\($0.1)" }, "\(file.text.debugDescription)")
            #expect(ours == theirs, "\(file.text.debugDescription)")
        }
    }
}
