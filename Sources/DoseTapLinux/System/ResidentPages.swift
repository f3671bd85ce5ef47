import Foundation
import Glibc
import Synchronization

/// Gives back the resident pages of the program's own code and read-only data once they have done their
/// work (#15, docs/performance.md "RSS as installed").
///
/// Most of the agent's resident set is clean pages of its 95 MB executable and of its libraries, mapped
/// while it starts (and while it handles an event): the kernel maps up to 16 neighbouring pages that are
/// in the page cache at each page fault ("fault-around"), so the 950 faults of a start-up leave 30 MB
/// resident. Those pages hold nothing but the file's bytes: `madvise(MADV_DONTNEED)` unmaps them, they stay
/// in the page cache (the first memory the kernel reclaims, shared with every other process that maps the
/// file), and touching one again is a minor fault that maps it back from the cache, unchanged.
///
/// Only mappings where that is exactly true are released: private, not writable, backed by a file this
/// process mapped before it started working (the executable and the libraries it was linked with, which are
/// never unmapped), and, when chosen at start-up, without a single anonymous page (a page the process
/// changed — the relocated `.data.rel.ro` made read-only after relocation — would be lost and read back
/// unrelocated, so such a mapping is never touched). Nothing in the agent makes such a mapping writable
/// again (only the dynamic loader does, while it loads a library).
public struct ResidentPages: Sendable {
    /// One line of `/proc/self/smaps` with what the decision needs.
    public struct Mapping: Sendable, Equatable {
        public var start: UInt
        public var end: UInt
        public var permissions: String
        public var path: String
        /// Resident and anonymous (copied-on-write) kB of the mapping; nil when smaps did not say.
        public var residentKB: Int?
        public var anonymousKB: Int?
        /// Where in the file the mapping starts, and the file's inode (0 when not known).
        public var offset: UInt
        public var inode: UInt

        public init(start: UInt, end: UInt, permissions: String, path: String, residentKB: Int? = nil, anonymousKB: Int? = nil,
                    offset: UInt = 0, inode: UInt = 0) {
            self.start = start
            self.end = end
            self.permissions = permissions
            self.path = path
            self.residentKB = residentKB
            self.anonymousKB = anonymousKB
            self.offset = offset
            self.inode = inode
        }

        /// Private, readable, not writable, from a file, and not changed by this process: its pages can be read
        /// back from the file exactly as they are. A mapping whose anonymous size is unknown is not.
        public var isCleanFileCopy: Bool {
            let p = Array(permissions)
            return p.count == 4 && p[0] == "r" && p[1] == "-" && p[3] == "p" && path.hasPrefix("/") && anonymousKB == 0
        }
    }

    /// What one release did.
    public struct Released: Sendable, Equatable {
        /// Mappings released.
        public var mappings: Int
        /// Mappings the kernel refused (none expected: logged by the caller).
        public var failed: Int
    }

    /// The mappings a release may give back, chosen once at start-up (`releasable`).
    public let mappings: [Mapping]
    /// The pages the last release gave back, to be read again in one go by `warm()` (shared by copies).
    private let recorded = WorkingSet()
    /// The mapped files, open, for `warm()` to wait on their pages without mapping them.
    private let files: Files
    /// The pages mapped when `warm()` last began (the path of the wake-up that called it), which `release()` leaves
    /// mapped: see `warm()`.
    private let kept = WorkingSet()
    /// The most `warm()` keeps mapped. Between a battery sample's release and the next sample about 6 MB are
    /// mapped: the path of the wake-up, and the sample's own work that ran on the other threads after the loop's
    /// release (the next sample runs it again). More means other work since the last release (adverts, the
    /// dashboard), and then the set kept before stays kept (none, until a wake-up's path fits).
    public static let keptLimitKB = 8192
    /// The largest working set `release()` records (a battery sample maps 13–16 MB, start-up 30 MB): more is not
    /// read back at once. It reads into the page cache and maps nothing, so start-up's set is read back too: the
    /// first sample a minute after start otherwise ran cold.
    public static let workingSetLimitKB = 49_152

    private final class WorkingSet: Sendable {
        let runs = Mutex<[PageRun]>([])
    }

    /// Consecutive pages of a mapping, by address.
    public struct PageRun: Sendable, Equatable {
        public var start: UInt
        public var length: Int
        public init(start: UInt, length: Int) {
            self.start = start
            self.length = length
        }
    }

    /// Chooses from this process's mappings now (`/proc/self/smaps`: a few milliseconds, once): make it at
    /// start-up, when the executable and the libraries of its link map are mapped and relocated and nothing
    /// could yet have mapped a file it may later unmap.
    public init() {
        let all = Self.parse(smaps: Self.read("/proc/self/smaps"))
        self.init(mappings: Self.releasable(all))
    }

    public init(mappings: [Mapping]) {
        self.mappings = mappings
        files = Files(mappings)
    }

    /// Each mapped file open for reading (only where its inode is the one mapped: a file replaced since, by an
    /// upgrade, is not the one in memory), and /dev/null. Closed with the last copy.
    private final class Files: Sendable {
        let byPath: [String: Int32]
        let null: Int32

        init(_ mappings: [Mapping]) {
            var byPath: [String: Int32] = [:]
            for mapping in mappings where mapping.inode != 0 && byPath[mapping.path] == nil {
                let fd = open(mapping.path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { continue }
                var info = stat()
                if fstat(fd, &info) == 0, UInt(info.st_ino) == mapping.inode {
                    byPath[mapping.path] = fd
                } else {
                    close(fd)
                }
            }
            self.byPath = byPath
            null = byPath.isEmpty ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC)
        }

        deinit {
            for fd in byPath.values { close(fd) }
            if null >= 0 { close(null) }
        }
    }

    /// What `release()` recorded and `warm()` has not yet read back, in kB.
    public var recordedKB: Int {
        recorded.runs.withLock { $0.reduce(0) { $0 + $1.length } } / 1024
    }

    /// What `release()` leaves mapped, in kB.
    public var keptKB: Int {
        kept.runs.withLock { $0.reduce(0) { $0 + $1.length } } / 1024
    }

    /// Parses `/proc/PID/smaps` (or `/proc/PID/maps`: then sizes are nil). Lines it does not understand are
    /// skipped; a truncated text gives the mappings it holds.
    public static func parse(smaps text: String) -> [Mapping] {
        var mappings: [Mapping] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if let mapping = header(line) {
                mappings.append(mapping)
                continue
            }
            guard !mappings.isEmpty, let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon]
            guard key == "Rss" || key == "Anonymous" else { continue }
            let fields = line[line.index(after: colon)...].split(separator: " ")
            guard fields.count == 2, fields[1] == "kB", let kb = Int(fields[0]), kb >= 0 else { continue }
            if key == "Rss" { mappings[mappings.count - 1].residentKB = kb } else { mappings[mappings.count - 1].anonymousKB = kb }
        }
        return mappings
    }

    /// `start-end perms offset dev inode [path]`, or nil.
    private static func header(_ line: Substring) -> Mapping? {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, let dash = fields[0].firstIndex(of: "-"),
              let start = UInt(fields[0][..<dash], radix: 16), let end = UInt(fields[0][fields[0].index(after: dash)...], radix: 16),
              start < end, fields[1].count == 4, UInt(fields[2], radix: 16) != nil, fields[3].contains(":"), UInt(fields[4]) != nil
        else { return nil }
        let path = fields.count == 6 ? String(fields[5]).trimmingCharacters(in: .whitespaces) : ""
        return Mapping(start: start, end: end, permissions: String(fields[1]), path: path,
                       offset: UInt(fields[2], radix: 16) ?? 0, inode: UInt(fields[4]) ?? 0)
    }

    /// The mappings `release()` may give back: the clean copies of files.
    public static func releasable(_ mappings: [Mapping]) -> [Mapping] {
        mappings.filter(\.isCleanFileCopy)
    }

    /// Unmaps the resident pages of the chosen mappings now (each page comes back, unchanged, when touched).
    /// A mapping is released only while `/proc/self/maps` still shows it exactly as chosen (same range,
    /// permissions and file): none of them can gain a changed page without write permission, and a range that
    /// is no longer the same mapping is left alone. Cheap: no page-table walk beyond the unmapping itself.
    ///
    /// First it records which of their pages were mapped (`/proc/self/pagemap`: the pages the work since the last
    /// release used, with the kernel's fault-around neighbours), unless they are more than `workingSetLimitKB`.
    /// The pages `warm()` keeps are left mapped (and not recorded).
    @discardableResult
    public func release() -> Released {
        let now = Set(Self.parse(smaps: Self.read("/proc/self/maps")).map(Key.init))
        var released = Released(mappings: 0, failed: 0)
        let current = mappings.filter { now.contains(Key($0)) }
        let keep = kept.runs.withLock { $0 }
        let runs = Self.subtracting(keep, from: Self.presentRuns(of: current))
        let kb = runs.reduce(0) { $0 + $1.length } / 1024
        recorded.runs.withLock { $0 = kb <= Self.workingSetLimitKB ? runs : [] }
        for mapping in current {
            let whole = PageRun(start: mapping.start, length: Int(mapping.end - mapping.start))
            let parts = Self.subtracting(keep, from: [whole])
            if parts.allSatisfy({ madvise(UnsafeMutableRawPointer(bitPattern: $0.start), $0.length, MADV_DONTNEED) == 0 }) {
                released.mappings += 1
            } else {
                released.failed += 1
            }
        }
        return released
    }

    /// `runs` without the addresses of `holes` (each list in any order; the result in address order).
    public static func subtracting(_ holes: [PageRun], from runs: [PageRun]) -> [PageRun] {
        guard !holes.isEmpty else { return runs }
        let holes = holes.sorted { $0.start < $1.start }
        var out: [PageRun] = []
        for run in runs.sorted(by: { $0.start < $1.start }) {
            var start = run.start
            let end = run.start + UInt(run.length)
            for hole in holes where hole.start < end && hole.start + UInt(hole.length) > start {
                if hole.start > start { out.append(PageRun(start: start, length: Int(hole.start - start))) }
                start = max(start, hole.start + UInt(hole.length))
                if start >= end { break }
            }
            if start < end { out.append(PageRun(start: start, length: Int(end - start))) }
        }
        return out
    }

    /// Reads back, in one go, the pages the last release gave back, for work that is about to use the same pages
    /// again (the battery sample a minute later): on a machine that reclaims cold page cache (DAMON's `pageout`
    /// here, memory pressure on a Pi) those pages have left the cache, and touching them one by one is a read from
    /// the disk each, the thread asleep each time. Here all their reads are started at once (`MADV_WILLNEED`), then
    /// the thread waits for all of them in one pass over the files, into /dev/null (`sendfile`: no copy, and it
    /// sleeps only on a page whose read is still in flight — once, mostly, since they were all started together).
    /// Nothing is mapped: the work maps what it touches (with the kernel's fault-around), so the next recording is
    /// what it used, not what was read back (mapping the whole set made it creep by a megabyte or two each minute).
    /// Waiting only for the read started last (an earlier version) left the thread to sleep on the others one by
    /// one as the work touched them: up to a dozen times a sample (docs/performance.md). Does nothing when nothing
    /// is recorded; each recording is read back once. Returns the kB it asked for.
    ///
    /// The pages mapped when it begins — since the last release, that is the path of the wake-up that called it
    /// (the event loop, the timer, the call itself), which ran before anything could be read back — are kept
    /// mapped by the releases that follow, unless there are more than `keptLimitKB` (then the set kept before stays
    /// kept): a page mapped is never paged out as a cold one, so the next wake-up finds its path in memory instead
    /// of sleeping on it page by page.
    @discardableResult
    public func warm() -> Int {
        let awake = Self.presentRuns(of: mappings)
        let awakeKB = awake.reduce(0) { $0 + $1.length } / 1024
        // Over the limit, what was kept stays kept (it is still mapped, so it counts in `awake`: a kept set near the
        // limit plus one more page of path went over it, and dropping it all made the next wake-up fault its whole
        // path back, one sample in three; none is kept only until a wake-up's path fits).
        kept.runs.withLock { $0 = awakeKB <= Self.keptLimitKB ? awake : $0 }
        let runs = recorded.runs.withLock { runs in
            defer { runs = [] }
            return runs
        }
        for run in runs {
            _ = madvise(UnsafeMutableRawPointer(bitPattern: run.start), run.length, MADV_WILLNEED)
        }
        // The last started first: the reads complete about in the order they were started, so one sleep on the
        // last one mostly finds every other done (in address order it was one sleep per batch the disk completed).
        for run in runs.reversed() { waitForCache(run) }
        return runs.reduce(0) { $0 + $1.length } / 1024
    }

    /// Returns once the pages of `run` are in the page cache, without mapping them: its file's bytes are sent to
    /// /dev/null. A run whose file is not open (not the one mapped, or unreadable) is not waited for.
    private func waitForCache(_ run: PageRun) {
        guard files.null >= 0,
              let mapping = mappings.first(where: { $0.start <= run.start && run.start + UInt(run.length) <= $0.end }),
              let fd = files.byPath[mapping.path] else { return }
        var offset = off_t(mapping.offset + (run.start - mapping.start))
        var left = run.length
        while left > 0 {
            let sent = sendfile(files.null, fd, &offset, left)
            if sent > 0 {
                left -= sent
            } else if sent < 0 && errno == EINTR {
                continue
            } else {
                return  // the end of the file, or an error: nothing more to wait for
            }
        }
    }

    /// The runs of consecutive pages of `mappings` that are mapped now (`/proc/self/pagemap`'s bit 63, readable by
    /// the process itself; none when it cannot be read).
    public static func presentRuns(of mappings: [Mapping]) -> [PageRun] {
        let fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))
        var runs: [PageRun] = []
        for mapping in mappings where mapping.start % pageSize == 0 && mapping.end % pageSize == 0 {
            let pages = Int((mapping.end - mapping.start) / pageSize)
            var entries = [UInt64](repeating: 0, count: pages)
            let wanted = pages * 8
            let n = entries.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(mapping.start / pageSize * 8)) }
            guard n == wanted else { continue }
            runs += presentRuns(entries: entries, start: mapping.start, pageSize: pageSize)
        }
        return runs
    }

    /// The runs of pagemap entries with the "present" bit (63), as address ranges from `start`.
    public static func presentRuns(entries: [UInt64], start: UInt, pageSize: UInt) -> [PageRun] {
        var runs: [PageRun] = []
        var index = 0
        while index < entries.count {
            guard entries[index] >> 63 == 1 else {
                index += 1
                continue
            }
            var end = index + 1
            while end < entries.count, entries[end] >> 63 == 1 { end += 1 }
            runs.append(PageRun(start: start + UInt(index) * pageSize, length: (end - index) * Int(pageSize)))
            index = end
        }
        return runs
    }

    /// What identifies a mapping between two reads of /proc.
    private struct Key: Hashable {
        var start: UInt, end: UInt, permissions: String, path: String
        init(_ m: Mapping) { (start, end, permissions, path) = (m.start, m.end, m.permissions, m.path) }
    }

    /// The process's resident set in kB (`VmRSS`), or nil.
    public static func residentKB() -> Int? {
        for line in read("/proc/self/status").split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// A /proc file's text ("" when it cannot be read: nothing is then released).
    static func read(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes.append(contentsOf: chunk[0..<n])
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// How much of this process's resident set is pages of files (`/proc/self/statm`'s third field: `RssFile`
/// plus `RssShmem`), read cheaply enough for every wake-up of the loop: the file stays open and each reading
/// is one `pread` of a few dozen bytes (procfs makes the text afresh at offset 0).
public final class FileResidentMeter: Sendable {
    private let fd: Int32
    private let pageKB = max(1, sysconf(Int32(_SC_PAGESIZE)) / 1024)

    /// nil when /proc/self/statm cannot be opened.
    public init?(path: String = "/proc/self/statm") {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
    }

    deinit { close(fd) }

    /// kB of file pages resident now; nil if the reading fails.
    public func kilobytes() -> Int? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            var n: Int
            repeat { n = pread(fd, buffer.baseAddress, buffer.count, 0) } while n < 0 && errno == EINTR
            guard n > 0 else { return nil }
            return Self.sharedPages(statm: String(decoding: UnsafeBufferPointer(rebasing: buffer[0..<n]), as: UTF8.self)).map { $0 * pageKB }
        }
    }

    /// The third of statm's seven numbers (pages): "size resident shared text lib data dt\n"; nil for anything else.
    public static func sharedPages(statm: String) -> Int? {
        guard statm.hasSuffix("\n") else { return nil }
        let fields = statm.dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 7, fields.allSatisfy({ !$0.isEmpty && $0.count <= 18 && $0.allSatisfy { ("0"..."9").contains($0) } }) else {
            return nil
        }
        return Int(fields[2])
    }
}
