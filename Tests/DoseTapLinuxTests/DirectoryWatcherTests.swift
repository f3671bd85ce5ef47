import DoseTapLinux
import Foundation
import Synchronization
import Testing

/// One inotify watch, many followers: the scheduler and the button service both see a write the command
/// line makes, through one descriptor.
@Suite("Directory watcher", .timeLimit(.minutes(1)))
struct DirectoryWatcherTests {
    @Test("every subscriber sees a write; a subscriber that stopped is dropped; the streams end with the watcher")
    func fanOut() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var watcher: DirectoryWatcher? = try DirectoryWatcher(directory: dir.path)
        let first = watcher!.changes(), second = watcher!.changes()
        do { _ = watcher!.changes() }  // subscribed and dropped at once
        try Data("x".utf8).write(to: dir.appendingPathComponent("a"))
        var a = first.makeAsyncIterator(), b = second.makeAsyncIterator()
        #expect(await a.next() != nil)
        #expect(await b.next() != nil)
        // One write may arrive as several inotify reads: at most one more coalesced signal is pending, then
        // the streams end once the watcher is gone.
        watcher = nil
        var pending = 0
        while await a.next() != nil { pending += 1 }
        while await b.next() != nil { pending += 1 }
        #expect(pending <= 2)
    }

    @Test("generation() changes as soon as a write returned (read now, not when the loop gets to it), and the followers still hear it")
    func generationIsCurrent() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let watcher = try DirectoryWatcher(directory: dir.path)
        let follower = watcher.changes()
        var last = watcher.generation()
        #expect(watcher.generation() == last)  // nothing happened: the same number
        for round in 1...20 {
            // Each write is followed at once by the question: no waiting for the event loop in between.
            try Data("\(round)".utf8).write(to: dir.appendingPathComponent("dosetap.sqlite-wal"))
            let now = watcher.generation()
            #expect(now > last, "round \(round)")
            last = now
        }
        // A status file the agent writes itself is not a change of the store. (First the number settles: on a
        // loaded machine an event of the last write may still be on its way.)
        var settled = watcher.generation()
        for _ in 0..<100 {
            try await Task.sleep(for: .milliseconds(20))
            let again = watcher.generation()
            if again == settled { break }
            settled = again
        }
        try Data("{}".utf8).write(to: dir.appendingPathComponent("wake-status.json"))
        #expect(watcher.generation() == settled)
        var iterator = follower.makeAsyncIterator()
        #expect(await iterator.next() != nil)
    }

    @Test("a burst the filter declines is counted but signals no subscriber; the filter is asked with its names, ignored files left out")
    func declinedBurst() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let asked = Mutex<[Set<String>]>([])
        var declining: DirectoryWatcher? = try DirectoryWatcher(directory: dir.path, signalling: { names in
            asked.withLock { $0.append(names) }
            return false
        })
        let declined = declining!.changes()
        let before = declining!.generation()
        try Data("x".utf8).write(to: dir.appendingPathComponent("dosetap.sqlite-wal"))
        try Data("{}".utf8).write(to: dir.appendingPathComponent("wake-status.json"))
        // Read now (whether the loop or this call read the events, they were decided before it returned).
        #expect(declining!.generation() > before)
        #expect(asked.withLock { $0.reduce(into: Set<String>()) { $0.formUnion($1) } } == ["dosetap.sqlite-wal"])
        // With the watcher gone the stream ends: nothing was pending.
        declining = nil
        var heard = 0
        for await _ in declined { heard += 1 }
        #expect(heard == 0)

        // The same burst, accepted: signalled.
        let accepting = try DirectoryWatcher(directory: dir.path, signalling: { _ in true })
        let accepted = accepting.changes()
        try Data("y".utf8).write(to: dir.appendingPathComponent("dosetap.sqlite-wal"))
        _ = accepting.generation()
        var iterator = accepted.makeAsyncIterator()
        #expect(await iterator.next() != nil)
    }

    @Test("a folder that cannot be watched is a one-line error")
    func missingFolder() {
        #expect(throws: SystemCallError.self) { try DirectoryWatcher(directory: "/nonexistent/dosetap-\(UUID().uuidString)") }
    }
}
