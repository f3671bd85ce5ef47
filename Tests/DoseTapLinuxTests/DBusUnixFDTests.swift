import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The descriptors of a pipe's ends this process holds (by the pipe's inode in /proc/self/fd).
func descriptors(ofPipeWith fd: Int32) -> Int {
    guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)") else { return -1 }
    let all = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return all.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == me }.count
}

@Suite("D-Bus file descriptors: owned, closed once, never leaked", .serialized)
struct DBusUnixFDTests {
    static func pipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = Glibc.pipe(&fds)
        return (fds[0], fds[1])
    }

    @Test("close() closes once; take() hands over; a dropped box closes its descriptor")
    func ownership() {
        let p = Self.pipe()
        defer { close(p.read) }
        let box = DBusUnixFD(owning: p.write)
        #expect(box.isOpen)
        #expect(descriptors(ofPipeWith: p.read) == 2)
        box.close()
        #expect(!box.isOpen)
        #expect(box.take() == nil)
        box.close()
        #expect(descriptors(ofPipeWith: p.read) == 1)

        let q = Self.pipe()
        defer { close(q.read) }
        do {
            let taken = DBusUnixFD(owning: q.write)
            let fd = taken.take()
            #expect(fd == q.write)
            _ = taken
        }
        #expect(fcntl(q.write, F_GETFD) != -1, "a taken descriptor is the taker's")
        close(q.write)

        let r = Self.pipe()
        defer { close(r.read) }
        do { _ = DBusValue.unixFD(DBusUnixFD(owning: r.write)) }
        #expect(descriptors(ofPipeWith: r.read) == 1, "the dropped value closed its descriptor")
    }

    @Test("an 'h' survives a round trip through a real peer, and no duplicate stays behind")
    func roundTrip() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            _ = try await c.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                 interface: "org.freedesktop.DBus.Mock", member: "AddMethod",
                                 arguments: [.string("org.dosetap.Test"), .string("EchoFD"), .string("h"), .string("h"),
                                             .string("ret = args[0]")])
            let p = Self.pipe()
            defer { close(p.read) }
            let sent = DBusUnixFD(owning: p.write)
            let back = try await c.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                        interface: "org.dosetap.Test", member: "EchoFD", arguments: [.unixFD(sent)])
            let received = try #require(back.first?.unixFD)
            #expect(back.first?.signature == "h")
            #expect(received != sent)
            // The received descriptor writes into our pipe.
            received.withDescriptor { fd in
                _ = fd.map { write($0, "x", 1) }
            }
            var byte: UInt8 = 0
            #expect(read(p.read, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
            // Ours: the read end, the one we sent, the one we got back; nothing held by libdbus.
            #expect(descriptors(ofPipeWith: p.read) == 3)
            sent.close()
            received.close()
            received.close()
            #expect(descriptors(ofPipeWith: p.read) == 1)
        }
    }

    @Test("an Inhibit reply without exactly one descriptor is refused, and a descriptor it carried is closed")
    func inhibitReplyWithoutFD() {
        for reply: [DBusValue] in [[], [.string("7")], [.uint32(3)], [.variant(.int32(4))]] {
            #expect(throws: DBusError.self) { _ = try InhibitorLock(reply: reply) }
        }
        let p = Self.pipe()
        defer { close(p.read) }
        do {
            let q = Self.pipe()
            #expect(throws: DBusError.self) {
                _ = try InhibitorLock(reply: [.unixFD(DBusUnixFD(owning: p.write)), .unixFD(DBusUnixFD(owning: q.write))])
            }
            close(q.read)
        }
        #expect(descriptors(ofPipeWith: p.read) == 1, "the refused reply's descriptor was closed")
        do {
            let r = Self.pipe()
            let closed = DBusUnixFD(owning: r.write)
            closed.close()
            close(r.read)
            #expect(throws: DBusError.self) { _ = try InhibitorLock(reply: [.unixFD(closed)]) }
        }
    }
}
