import DoseTapLinux
import Foundation
import Glibc
import Synchronization
import Testing

/// Giving back clean pages of code (#15): which mappings may be released, and that a release on this very
/// process unmaps pages which then read back unchanged.
@Suite("ResidentPages")
struct ResidentPagesTests {
    static let exe = "/usr/bin/dosetap"
    static let smaps = """
        55d0a0000000-55d0a5afc000 r-xp 00000000 fe:00 5816323                    /usr/bin/dosetap
        Size:              92144 kB
        Rss:               27500 kB
        Anonymous:             0 kB
        VmFlags: rd ex mr mw me dw
        55d0a5afc000-55d0a5c54000 r--p 03263000 fe:00 5816323                    /usr/bin/dosetap
        Rss:                1300 kB
        Anonymous:          1300 kB
        55d0a5c54000-55d0a8000000 rw-p 033bb000 fe:00 5816323                    /usr/bin/dosetap
        Rss:                5300 kB
        Anonymous:           500 kB
        55d0a8000000-55d0a8100000 rw-p 00000000 00:00 0                          [heap]
        Rss:                2000 kB
        Anonymous:          2000 kB
        7f0000000000-7f0000160000 r-xp 00028000 fe:00 131                        /usr/lib/x86_64-linux-gnu/libc.so.6
        Rss:                1600 kB
        Anonymous:             0 kB
        7f0000200000-7f0000208000 rw-s 00000000 fe:00 999                        /home/u/.local/share/dosetap/dosetap.sqlite-shm
        Rss:                  32 kB
        Anonymous:             0 kB
        7f0000300000-7f0000310000 r--s 00000000 fe:00 998                        /home/u/.local/share/dosetap/dosetap.sqlite
        Rss:                  64 kB
        Anonymous:             0 kB
        7f0000400000-7f0000410000 r--p 00000000 fe:00 997                        /tmp/mapped later.bin
        Rss:                  64 kB
        Anonymous:             0 kB
        7f0000500000-7f0000510000 r-xp 00000000 fe:00 996                        /usr/lib/x86_64-linux-gnu/libnew.so
        Rss:                  64 kB
        7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
        Rss:                   8 kB
        Anonymous:             0 kB
        """

    @Test("smaps is read per mapping: range, permissions, path (spaces kept), file offset and inode, resident and anonymous kB")
    func parses() {
        let mappings = ResidentPages.parse(smaps: Self.smaps)
        #expect(mappings.count == 10)
        #expect(mappings[0] == .init(start: 0x55d0a0000000, end: 0x55d0a5afc000, permissions: "r-xp", path: Self.exe,
                                     residentKB: 27500, anonymousKB: 0, offset: 0, inode: 5816323))
        #expect(mappings[1].offset == 0x03263000 && mappings[4].offset == 0x28000 && mappings[4].inode == 131)
        #expect(mappings[3].path == "[heap]")
        #expect(mappings[7].path == "/tmp/mapped later.bin")
        #expect(mappings[8].anonymousKB == nil)
    }

    @Test("only clean private read-only copies of files are chosen")
    func choosesOnlyCleanCopies() {
        let chosen = ResidentPages.releasable(ResidentPages.parse(smaps: Self.smaps))
        // The executable's code, libc's and a read-only private file: yes. The relocated read-only data
        // (anonymous pages), the writable data, the heap, shared mappings of the database, a mapping whose
        // anonymous size smaps did not give, and the vDSO: never.
        #expect(chosen.map(\.start) == [0x55d0a0000000, 0x7f0000000000, 0x7f0000400000])
    }

    @Test("hostile smaps text: garbage, truncation, bad numbers and a missing path release nothing wrong")
    func hostileText() {
        #expect(ResidentPages.parse(smaps: "").isEmpty)
        #expect(ResidentPages.parse(smaps: "Rss: 12 kB\nAnonymous: 0 kB\n").isEmpty)
        #expect(ResidentPages.parse(smaps: "zz-10 r-xp 0 fe:00 1 /x\n10-zz r-xp 0 fe:00 1 /x\n20-10 r-xp 0 fe:00 1 /x\n").isEmpty)
        // Truncated in the middle of its sizes: the anonymous size is unknown, so it is not released.
        let truncated = ResidentPages.parse(smaps: "1000-2000 r-xp 00000000 fe:00 5 /usr/bin/dosetap\nRss: 4 kB\nAnony")
        #expect(truncated.count == 1 && truncated[0].anonymousKB == nil)
        #expect(ResidentPages.releasable(truncated).isEmpty)
        // A negative or non-kB size is not believed.
        let negative = ResidentPages.parse(smaps: "1000-2000 r-xp 00000000 fe:00 5 /usr/bin/dosetap\nAnonymous: -4 kB\n")
        #expect(ResidentPages.releasable(negative).isEmpty)
        let unit = ResidentPages.parse(smaps: "1000-2000 r-xp 00000000 fe:00 5 /usr/bin/dosetap\nAnonymous: 0 MB\n")
        #expect(ResidentPages.releasable(unit).isEmpty)
        // Permissions that are not four letters: not a mapping line.
        #expect(ResidentPages.parse(smaps: "1000-2000 r-x 00000000 fe:00 5 /usr/bin/dosetap\n").isEmpty)
    }

    @Test("a release on this process unmaps clean pages of its executable, and they read back unchanged")
    func releasesThisProcess() throws {
        let pages = ResidentPages()
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        // The executable's code is chosen; its writable data never is.
        #expect(pages.mappings.contains { $0.path == exe && $0.permissions == "r-xp" })
        #expect(!pages.mappings.contains { $0.permissions.contains("w") })
        // The bytes of a function of the executable, before and after.
        let probe = unsafeBitCast(ResidentPagesTests.probe, to: UnsafeRawPointer.self)
        let before = Array(UnsafeRawBufferPointer(start: probe, count: 64))
        #expect(ResidentPagesTests.probe() == 42)
        let resident = { () -> Int in
            ResidentPages.parse(smaps: try! String(contentsOfFile: "/proc/self/smaps", encoding: .utf8))
                .filter { $0.path == exe && $0.permissions == "r-xp" }.compactMap(\.residentKB).reduce(0, +)
        }
        let residentBefore = resident()
        let released = pages.release()
        #expect(released.failed == 0)
        #expect(released.mappings >= 1)
        // Fewer pages of the code are resident (other tests running at the same time map some back at once).
        #expect(resident() < residentBefore)
        // Still callable, still the same bytes: read back from the file.
        #expect(ResidentPagesTests.probe() == 42)
        #expect(Array(UnsafeRawBufferPointer(start: probe, count: 64)) == before)
        // The writable and relocated data kept their values (a global set before the release).
        #expect(ResidentPagesTests.marker.withLock { $0 } == "kept")
    }

    @Test("a mapping that is no longer the one chosen (another range or permissions) is left alone")
    func leavesChangedMappings() {
        let gone = ResidentPages(mappings: [.init(start: 0x1000, end: 0x2000, permissions: "r-xp", path: "/nonexistent", residentKB: 4, anonymousKB: 0)])
        let released = gone.release()
        #expect(released.mappings == 0 && released.failed == 0)
    }

    @Test("pagemap entries become runs of present pages: bit 63 only, both ends, empty and full")
    func presentRuns() {
        let present: UInt64 = 1 << 63
        let swapped: UInt64 = 1 << 62 // not present: not a run
        let entries: [UInt64] = [present, present | 0x1234, 0, swapped, present, 0, present]
        let runs = ResidentPages.presentRuns(entries: entries, start: 0x10000, pageSize: 4096)
        let expected: [ResidentPages.PageRun] = [.init(start: 0x10000, length: 8192), .init(start: 0x14000, length: 4096),
                                                 .init(start: 0x16000, length: 4096)]
        #expect(runs == expected)
        #expect(ResidentPages.presentRuns(entries: [], start: 0x10000, pageSize: 4096).isEmpty)
        #expect(ResidentPages.presentRuns(entries: [0, swapped, 1 << 61], start: 0x10000, pageSize: 4096).isEmpty)
        #expect(ResidentPages.presentRuns(entries: Array(repeating: present, count: 5), start: 0, pageSize: 16384) == [.init(start: 0, length: 5 * 16384)])
    }

    /// A private read-only mapping of a new file of `pages` pages, as the loader maps code.
    func mapFile(pages: Int) throws -> (mapping: ResidentPages.Mapping, pageSize: Int, close: () -> Void) {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-pages-\(UUID().uuidString)").path
        var bytes = Data(capacity: pages * pageSize)
        for page in 0..<pages { bytes.append(Data(repeating: UInt8(truncatingIfNeeded: page), count: pageSize)) }
        try bytes.write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { Glibc.close(fd) }
        let base = mmap(nil, pages * pageSize, PROT_READ, MAP_PRIVATE, fd, 0)
        try #require(base != MAP_FAILED)
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        let start = UInt(bitPattern: base)
        let mapping = ResidentPages.Mapping(start: start, end: start + UInt(pages * pageSize), permissions: "r--p", path: path,
                                            residentKB: 0, anonymousKB: 0, offset: 0, inode: UInt(info.st_ino))
        return (mapping, pageSize, { munmap(base, pages * pageSize); unlink(path) })
    }

    func byte(_ mapping: ResidentPages.Mapping, page: Int, pageSize: Int) -> UInt8 {
        UnsafePointer<UInt8>(bitPattern: mapping.start + UInt(page * pageSize))!.pointee
    }

    func presentPages(_ mapping: ResidentPages.Mapping, pageSize: Int) -> Set<Int> {
        Set(ResidentPages.presentRuns(of: [mapping]).flatMap { run in
            (0..<run.length / pageSize).map { Int(run.start - mapping.start) / pageSize + $0 }
        })
    }

    /// The pages of `mapping` in the page cache now (`mincore`), mapped or not.
    func cachedPages(_ mapping: ResidentPages.Mapping, pageSize: Int) -> Set<Int> {
        let count = Int(mapping.end - mapping.start) / pageSize
        var vector = [UInt8](repeating: 0, count: count)
        guard mincore(UnsafeMutableRawPointer(bitPattern: mapping.start), count * pageSize, &vector) == 0 else { return [] }
        return Set(vector.indices.filter { vector[$0] & 1 == 1 })
    }

    @Test("a release records the pages the work mapped; warm() reads them again, once, waits until they are in the page cache and maps none")
    func recordsAndWarms() throws {
        // 8 MB: the kernel maps a file's cached neighbours with each fault ("fault-around", 16 pages) and, with large
        // folios, a whole folio of up to 2 MB (512 pages); two touches 7 MB apart map at most 1,024 of the 2,048 pages
        // (with 256 pages, a loaded run here mapped all of them).
        let (mapping, pageSize, done) = try mapFile(pages: 2048)
        defer { done() }
        let pages = ResidentPages(mappings: [mapping])
        // The work: two pages far apart.
        #expect(byte(mapping, page: 3, pageSize: pageSize) == 3)
        #expect(byte(mapping, page: 1800, pageSize: pageSize) == UInt8(truncatingIfNeeded: 1800))
        let used = presentPages(mapping, pageSize: pageSize)
        #expect(used.isSuperset(of: [3, 1800]))
        #expect(used.count <= 1024)

        let released = pages.release()
        #expect(released.mappings == 1 && released.failed == 0)
        #expect(presentPages(mapping, pageSize: pageSize).isEmpty)
        #expect(pages.recordedKB == used.count * pageSize / 1024)

        // Out of the page cache, as after a minute on this VM (DAMON's pageout of cold unmapped pages), where the
        // file system lets them go (a tmpfs keeps them).
        let file = open(mapping.path, O_RDONLY | O_CLOEXEC)
        try #require(file >= 0)
        _ = fsync(file)  // written just now: only clean pages can be dropped
        _ = posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED)
        close(file)
        #expect(pages.warm() == used.count * pageSize / 1024)
        // Back in the cache when it returns (waited for, read into /dev/null), and none of them mapped: the work maps
        // them itself as it touches them, so nothing beyond what it used is mapped. Same bytes.
        #expect(cachedPages(mapping, pageSize: pageSize).isSuperset(of: used))
        #expect(presentPages(mapping, pageSize: pageSize).isEmpty)
        #expect(byte(mapping, page: 3, pageSize: pageSize) == 3)
        #expect(byte(mapping, page: 1800, pageSize: pageSize) == UInt8(truncatingIfNeeded: 1800))
        // Read back once: a second warm() has nothing to do until the next release records again.
        #expect(pages.recordedKB == 0)
        #expect(pages.warm() == 0)
    }

    @Test("warm() keeps mapped what was mapped when it began (its wake-up's own path); the releases after it leave that mapped")
    func keepsTheWakePath() throws {
        let (mapping, pageSize, done) = try mapFile(pages: 2048)
        defer { done() }
        let pages = ResidentPages(mappings: [mapping])
        // A sample: its work, given back at its end.
        #expect(byte(mapping, page: 3, pageSize: pageSize) == 3)
        #expect(byte(mapping, page: 1800, pageSize: pageSize) == UInt8(truncatingIfNeeded: 1800))
        pages.release()
        #expect(presentPages(mapping, pageSize: pageSize).isEmpty)
        // The next one: its wake-up's path (page 1000, in another 2 MB folio than 3 and 1800) runs before warm(), then the work.
        #expect(byte(mapping, page: 1000, pageSize: pageSize) == UInt8(truncatingIfNeeded: 1000))
        let path = presentPages(mapping, pageSize: pageSize)
        #expect(path.contains(1000) && !path.contains(3) && !path.contains(1800))
        pages.warm()
        #expect(pages.keptKB == path.count * pageSize / 1024)
        #expect(byte(mapping, page: 3, pageSize: pageSize) == 3)
        #expect(byte(mapping, page: 1800, pageSize: pageSize) == UInt8(truncatingIfNeeded: 1800))
        pages.release()
        // The path stays mapped, the rest goes (and is what the next warm() reads back).
        #expect(presentPages(mapping, pageSize: pageSize) == path)
        #expect(pages.recordedKB > 0)
        // Again, with nothing touched before warm() but the path, still mapped: the same kept, the same left.
        pages.warm()
        #expect(pages.keptKB == path.count * pageSize / 1024)
        #expect(byte(mapping, page: 3, pageSize: pageSize) == 3)
        pages.release()
        #expect(presentPages(mapping, pageSize: pageSize) == path)
    }

    @Test("more mapped than keptLimitKB when warm() begins (other work since the last release): nothing kept, all given back")
    func keepsNothingAboveTheLimit() throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let count = ResidentPages.keptLimitKB * 1024 / pageSize + 64
        let (mapping, _, done) = try mapFile(pages: count)
        defer { done() }
        let pages = ResidentPages(mappings: [mapping])
        var sum = 0
        for page in 0..<count { sum &+= Int(byte(mapping, page: page, pageSize: pageSize)) }
        #expect(sum > 0)
        pages.warm()
        #expect(pages.keptKB == 0)
        pages.release()
        #expect(presentPages(mapping, pageSize: pageSize).isEmpty)
    }

    @Test("more mapped than keptLimitKB when a later warm() begins: the set kept before stays kept and mapped, the rest is given back")
    func keepsTheLastPathAboveTheLimit() throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let count = ResidentPages.keptLimitKB * 1024 / pageSize + 64
        let (mapping, _, done) = try mapFile(pages: count)
        defer { done() }
        let pages = ResidentPages(mappings: [mapping])
        // A sample whose wake-up path is page 100 (and its fault-around neighbours): kept.
        #expect(byte(mapping, page: 3, pageSize: pageSize) == 3)
        pages.release()
        #expect(byte(mapping, page: 100, pageSize: pageSize) == 100)
        let path = presentPages(mapping, pageSize: pageSize)
        pages.warm()
        #expect(pages.keptKB == path.count * pageSize / 1024)
        pages.release()
        #expect(presentPages(mapping, pageSize: pageSize) == path)
        // Other work since then mapped more than the limit (the path, still mapped, among it): the path stays kept,
        // where the all-or-nothing rule dropped it and the next wake-up faulted it back.
        var sum = 0
        for page in 0..<count { sum &+= Int(byte(mapping, page: page, pageSize: pageSize)) }
        #expect(sum > 0)
        #expect(presentPages(mapping, pageSize: pageSize).count > ResidentPages.keptLimitKB * 1024 / pageSize)
        pages.warm()
        #expect(pages.keptKB == path.count * pageSize / 1024)
        pages.release()
        #expect(presentPages(mapping, pageSize: pageSize) == path)
    }

    @Test("runs without holes: cut, split, removed, left whole; in address order whatever the order given")
    func subtracting() {
        func runs(_ pairs: [(UInt, Int)]) -> [ResidentPages.PageRun] { pairs.map { .init(start: $0.0, length: $0.1) } }
        let run = runs([(0x1000, 0x8000)])  // 0x1000..<0x9000
        #expect(ResidentPages.subtracting([], from: run) == run)
        #expect(ResidentPages.subtracting(runs([(0x3000, 0x1000)]), from: run) == runs([(0x1000, 0x2000), (0x4000, 0x5000)]))
        #expect(ResidentPages.subtracting(runs([(0x0, 0x2000), (0x8000, 0x4000)]), from: run) == runs([(0x2000, 0x6000)]))
        #expect(ResidentPages.subtracting(runs([(0x1000, 0x8000)]), from: run).isEmpty)
        #expect(ResidentPages.subtracting(runs([(0x0, 0x10000)]), from: run).isEmpty)
        #expect(ResidentPages.subtracting(runs([(0x9000, 0x1000)]), from: run) == run)
        #expect(ResidentPages.subtracting(runs([(0x6000, 0x1000), (0x2000, 0x1000)]), from: runs([(0x20000, 0x1000), (0x1000, 0x8000)]))
                == runs([(0x1000, 0x1000), (0x3000, 0x3000), (0x7000, 0x2000), (0x20000, 0x1000)]))
    }

    @Test("a working set above the limit (start-up's) is not recorded, and warm() then does nothing")
    func largeSetNotRecorded() throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let count = (ResidentPages.workingSetLimitKB * 1024) / pageSize + 16
        let (mapping, _, done) = try mapFile(pages: count)
        defer { done() }
        let pages = ResidentPages(mappings: [mapping])
        var sum = 0
        for page in 0..<count { sum &+= Int(byte(mapping, page: page, pageSize: pageSize)) }
        #expect(sum > 0)
        #expect(presentPages(mapping, pageSize: pageSize).count == count)
        let released = pages.release()
        #expect(released.mappings == 1 && released.failed == 0)
        #expect(pages.recordedKB == 0)
        #expect(pages.warm() == 0)
        #expect(presentPages(mapping, pageSize: pageSize).isEmpty)
    }

    static let probe: @convention(c) () -> Int32 = { 42 }
    static let marker = Mutex("kept")
}
