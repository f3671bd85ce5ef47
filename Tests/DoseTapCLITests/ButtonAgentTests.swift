import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// The button commands. (Presses through BlueZ and the real agent are the scenarios of
/// `hw-fixtures/bluez/`, played by BlueZScenarioTests.)
@Suite("dosetap button commands")
struct ButtonAgentTests {
    @Test("button add/list/map/remove and their validation errors")
    func commands() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["button", "add", "a4-c1-38-8d-18-b2", "--kind", "bthome", "--bindkey", "231d39c1d7cc1ab1aee224cd096db932"]).exitCode == 0)
        #expect(try await cli.run(["button", "add", "12:22:33:44:55:66", "--kind", "hid", "--name", "shutter"]).exitCode == 0)
        #expect(try await cli.run(["button", "map", "12:22:33:44:55:66", "--single", "snooze", "--hold", "none", "--no-double"]).exitCode == 0)
        let list = try JSONSerialization.jsonObject(with: Data(try await cli.run(["button", "list", "--json"]).out.utf8)) as? [[String: Any]] ?? []
        #expect(list.count == 2)
        let shelly = try #require(list.first { $0["address"] as? String == "A4:C1:38:8D:18:B2" })
        #expect(shelly["encrypted"] as? Bool == true)
        let shutter = try #require(list.first { $0["name"] as? String == "shutter" })
        let mapping = try #require(shutter["mapping"] as? [String: Any])
        #expect(mapping["single"] as? String == "snooze" && mapping["hold"] as? String == "none" && mapping["noDouble"] as? Bool == true)
        #expect(try await cli.run(["button", "remove", "12:22:33:44:55:66"]).exitCode == 0)
        for (args, message) in [
            (["button", "add", "AA:BB:CC", "--kind", "bthome"], "invalid address 'AA:BB:CC'"),
            (["button", "add", "AA:BB:CC:DD:EE:GG", "--kind", "itag"], "invalid address"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "bthome", "--bindkey", "1234"], "invalid bindkey: expected 32 hex digits"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "bthome", "--bindkey", String(repeating: "z", count: 32)], "invalid bindkey"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "flic"], "flic"),
            (["button", "map", "AA:BB:CC:DD:EE:FF", "--single", "take"], "no button AA:BB:CC:DD:EE:FF"),
            (["button", "map", "A4:C1:38:8D:18:B2", "--single", "dance"], "dance"),
            (["button", "remove", "12-22-33-44-55-66"], "no button 12:22:33:44:55:66"),
            (["button", "remove", "11:22:33:44:55:66"], "no button 11:22:33:44:55:66"),
            (["button", "add", "00:00:00:00:00:00", "--kind", "hid"], "all-zero"),
            (["button", "add", "FF:FF:FF:FF:FF:FF", "--kind", "itag"], "broadcast"),
            (["button", "add", "11:22:33:44:55:66", "--kind", "hid"], "multicast"),
            (["button", "add", "A4:C1:38:8D:18:Ｂ2", "--kind", "bthome"], "invalid address"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "bthome", "--bindkey", "２31d39c1d7cc1ab1aee224cd096db932"], "invalid bindkey: character 1 is not a hex digit"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "bthome", "--bindkey", "231d39c1d7cc1ab1aee224cd096db932", "--remove-bindkey"], "exclude each other"),
        ] {
            let r = try await cli.run(args)
            #expect(r.exitCode != 0 && r.exitCode != nil, "\(args)")
            #expect(r.err.contains(message) && r.err.split(separator: "\n").count == 1, "\(args): \(r.err)")
        }
    }

    /// Finding: --name values were printed raw in button add/list/map.
    @Test("a name with escape sequences and a bidi override: escaped in text, exact in --json")
    func hostileName() async throws {
        let cli = try CLI()
        let name = "bed\u{1B}[2J\u{1B}]0;pwned\u{07}side\u{202E}kcatta"
        let shown = "bed\\x1b[2J\\x1b]0;pwned\\x07side\\u{202e}kcatta"
        let added = try await cli.run(["button", "add", "A4:C1:38:8D:18:B2", "--kind", "bthome", "--name", name])
        #expect(added.exitCode == 0 && added.out.contains(shown), "\(added.out.debugDescription)")
        let mapped = try await cli.run(["button", "map", "A4:C1:38:8D:18:B2", "--single", "snooze"])
        #expect(mapped.out.hasPrefix(shown + ":"), "\(mapped.out.debugDescription)")
        let list = try await cli.run(["button", "list"])
        #expect(list.out.hasPrefix(shown + "  A4:C1:38:8D:18:B2"), "\(list.out.debugDescription)")
        for r in [added, mapped, list] {
            #expect(!r.out.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || $0 == "\u{202E}" })
        }
        let json = try JSONSerialization.jsonObject(with: Data(try await cli.run(["button", "list", "--json"]).out.utf8)) as? [[String: Any]]
        #expect(json?.first?["name"] as? String == name)
    }

    /// Finding 7: adding an encrypted button again without --bindkey silently dropped its key, and its
    /// plaintext adverts (anyone's) then acted.
    @Test("adding an encrypted button again keeps its bindkey unless told otherwise, and says so")
    func readdKeepsKey() async throws {
        let cli = try CLI()
        func encrypted() async throws -> Bool? {
            let list = try JSONSerialization.jsonObject(with: Data(try await cli.run(["button", "list", "--json"]).out.utf8)) as? [[String: Any]]
            return list?.first?["encrypted"] as? Bool
        }
        #expect(try await cli.run(["button", "add", "A4:C1:38:8D:18:B2", "--kind", "bthome", "--bindkey", "231d39c1d7cc1ab1aee224cd096db932"]).exitCode == 0)
        let again = try await cli.run(["button", "add", "a4:c1:38:8d:18:b2", "--kind", "bthome", "--name", "bedside"])
        #expect(again.exitCode == 0)
        #expect(again.out.contains("Kept its bindkey"), "\(again.out)")
        #expect(try await encrypted() == true)
        let replaced = try await cli.run(["button", "add", "A4:C1:38:8D:18:B2", "--kind", "bthome", "--bindkey", "00112233445566778899aabbccddeeff"])
        #expect(replaced.out.contains("Replaced its bindkey") && replaced.exitCode == 0)
        let removed = try await cli.run(["button", "add", "A4:C1:38:8D:18:B2", "--kind", "bthome", "--remove-bindkey"])
        #expect(removed.out.contains("Removed its bindkey") && removed.exitCode == 0)
        #expect(try await encrypted() == false)
    }
}
