import DoseTapCore
import DoseTapLinux
import Foundation
import Testing

/// Reading UPower's files from a folder (the machine's `/etc/UPower`, or `DOSETAP_UPOWER_DIR` in tests).
@Suite("UPowerConfigFiles")
struct UPowerConfigFilesTests {
    static func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-upower-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir + "/UPower.conf.d", withIntermediateDirectories: true)
        return dir
    }

    static func write(_ text: String, _ path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test("no folder, or an empty one: 2 %, no notes")
    func missing() throws {
        let none = UPowerConfigFiles.read(directory: "/nonexistent/dosetap-\(UUID().uuidString)")
        #expect(none.policy == .upowerDefault)
        #expect(none.notes.isEmpty)
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(UPowerConfigFiles.read(directory: dir).policy == .upowerDefault)
    }

    @Test("the main file, then the drop-ins in name order; names UPower skips are skipped, with a note")
    func files() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.write("[UPower]\nPercentageAction=3\nCriticalPowerAction=PowerOff\n", dir + "/UPower.conf")
        #expect(UPowerConfigFiles.read(directory: dir).policy == PowerOffPolicy(percentage: 3, action: .powerOff))
        try Self.write("[UPower]\nPercentageAction=4\n", dir + "/UPower.conf.d/20-b.conf")
        try Self.write("[UPower]\nPercentageAction=1\n", dir + "/UPower.conf.d/10-a.conf")
        try Self.write("[UPower]\nPercentageAction=4.5\n", dir + "/UPower.conf.d/backup.conf")
        try Self.write("[UPower]\nPercentageAction=4.5\n", dir + "/UPower.conf.d/30-c.conf.disabled")
        let r = UPowerConfigFiles.read(directory: dir)
        #expect(r.policy == PowerOffPolicy(percentage: 4, action: .powerOff))
        #expect(r.notes.count == 1, "\(r.notes)")
    }

    @Test("an unreadable or oversized file, or a folder in its place, is noted and the defaults kept")
    func hostileFiles() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/UPower.conf", withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 300 * 1024).write(to: URL(fileURLWithPath: dir + "/UPower.conf.d/50-big.conf"))
        try Data([0x5B, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: dir + "/UPower.conf.d/60-binary.conf"))
        let r = UPowerConfigFiles.read(directory: dir)
        #expect(r.policy == .upowerDefault)
        #expect(r.notes.count == 3, "\(r.notes)")
    }

    @Test("DOSETAP_UPOWER_DIR names the folder; empty or unset means /etc/UPower")
    func environment() {
        #expect(UPowerConfigFiles.directory(environment: [:]) == "/etc/UPower")
        #expect(UPowerConfigFiles.directory(environment: ["DOSETAP_UPOWER_DIR": ""]) == "/etc/UPower")
        #expect(UPowerConfigFiles.directory(environment: ["DOSETAP_UPOWER_DIR": "/tmp/x"]) == "/tmp/x")
    }
}
