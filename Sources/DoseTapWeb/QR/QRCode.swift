/// A QR code (ISO/IEC 18004) of a short text, byte mode, error correction level M, versions 1–10 (up to
/// 213 bytes): enough for a pairing link. No package of the mirror makes QR codes; this is the standard
/// construction (Reed–Solomon over GF(256), the eight masks, format and version information).
public struct QRCode: Sendable, Equatable {
    public let version: Int
    public let mask: Int
    /// `modules[y][x]`, true for dark.
    public let modules: [[Bool]]
    public var size: Int { modules.count }

    public struct TooLong: Error, CustomStringConvertible {
        public var description: String { "the text is too long for a QR code of version 10 (at most 213 bytes)" }
    }

    // Level M, versions 1…10: error-correction codewords per block and number of blocks.
    static let eccPerBlock = [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26]
    static let blocks = [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5]

    public init(bytes: [UInt8], forcedMask: Int? = nil) throws(TooLong) {
        var chosen: Int?
        for v in 1...10 where Self.dataCapacityBits(v) >= 4 + (v < 10 ? 8 : 16) + bytes.count * 8 {
            chosen = v
            break
        }
        guard let version = chosen else { throw TooLong() }
        self.version = version
        let size = version * 4 + 17
        var builder = Builder(size: size)
        builder.drawFunctionPatterns(version: version)
        let codewords = Self.addErrorCorrection(Self.dataCodewords(bytes, version: version), version: version)
        builder.drawCodewords(codewords)
        var bestMask = 0
        if let forcedMask {
            bestMask = forcedMask
        } else {
            var best = Int.max
            for m in 0..<8 {
                var trial = builder
                trial.applyMask(m)
                trial.drawFormatBits(mask: m)
                let penalty = trial.penalty()
                if penalty < best { best = penalty; bestMask = m }
            }
        }
        builder.applyMask(bestMask)
        builder.drawFormatBits(mask: bestMask)
        mask = bestMask
        modules = builder.modules
    }

    public init(text: String) throws(TooLong) { try self.init(bytes: Array(text.utf8)) }

    static func rawDataModules(_ v: Int) -> Int {
        var result = (16 * v + 128) * v + 64
        if v >= 2 {
            let align = v / 7 + 2
            result -= (25 * align - 10) * align - 55
            if v >= 7 { result -= 36 }
        }
        return result
    }

    static func dataCapacityBits(_ v: Int) -> Int {
        (rawDataModules(v) / 8 - eccPerBlock[v] * blocks[v]) * 8
    }

    static func dataCodewords(_ bytes: [UInt8], version: Int) -> [UInt8] {
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) { for i in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> i) & 1 == 1) } }
        append(0b0100, 4)
        append(bytes.count, version < 10 ? 8 : 16)
        for b in bytes { append(Int(b), 8) }
        let capacity = dataCapacityBits(version)
        append(0, min(4, capacity - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var out: [UInt8] = []
        for i in stride(from: 0, to: bits.count, by: 8) {
            out.append(bits[i..<i + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) })
        }
        var pad: UInt8 = 0xEC
        while out.count < capacity / 8 {
            out.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        return out
    }

    static func addErrorCorrection(_ data: [UInt8], version: Int) -> [UInt8] {
        let numBlocks = blocks[version]
        let eccLen = eccPerBlock[version]
        let raw = rawDataModules(version) / 8
        let numShort = numBlocks - raw % numBlocks
        let shortLen = raw / numBlocks
        let divisor = ReedSolomon.divisor(degree: eccLen)
        var all: [[UInt8]] = []
        var k = 0
        for i in 0..<numBlocks {
            let length = shortLen - eccLen + (i < numShort ? 0 : 1)
            var block = Array(data[k..<k + length])
            k += length
            let ecc = ReedSolomon.remainder(block, divisor: divisor)
            if i < numShort { block.append(0) }
            all.append(block + ecc)
        }
        var result: [UInt8] = []
        for i in 0..<all[0].count {
            for (j, block) in all.enumerated() where i != shortLen - eccLen || j >= numShort {
                result.append(block[i])
            }
        }
        return result
    }

    struct Builder {
        var modules: [[Bool]]
        var isFunction: [[Bool]]
        let size: Int

        init(size: Int) {
            self.size = size
            modules = Array(repeating: Array(repeating: false, count: size), count: size)
            isFunction = modules
        }

        mutating func set(_ x: Int, _ y: Int, _ dark: Bool) {
            modules[y][x] = dark
            isFunction[y][x] = true
        }

        mutating func drawFunctionPatterns(version: Int) {
            for i in 0..<size {
                set(6, i, i % 2 == 0)
                set(i, 6, i % 2 == 0)
            }
            drawFinder(3, 3)
            drawFinder(size - 4, 3)
            drawFinder(3, size - 4)
            let positions = QRCode.alignmentPositions(version)
            let n = positions.count
            for i in 0..<n {
                for j in 0..<n where !(i == 0 && j == 0 || i == 0 && j == n - 1 || i == n - 1 && j == 0) {
                    for dy in -2...2 {
                        for dx in -2...2 { set(positions[i] + dx, positions[j] + dy, max(abs(dx), abs(dy)) != 1) }
                    }
                }
            }
            drawFormatBits(mask: 0) // reserves the area; redrawn with the real mask
            if version >= 7 {
                var rem = version
                for _ in 0..<12 { rem = (rem << 1) ^ ((rem >> 11) * 0x1F25) }
                let bits = version << 12 | rem
                for i in 0..<18 {
                    let bit = (bits >> i) & 1 == 1
                    let a = size - 11 + i % 3
                    let b = i / 3
                    set(a, b, bit)
                    set(b, a, bit)
                }
            }
        }

        mutating func drawFinder(_ x: Int, _ y: Int) {
            for dy in -4...4 {
                for dx in -4...4 {
                    let distance = max(abs(dx), abs(dy))
                    let xx = x + dx, yy = y + dy
                    if (0..<size).contains(xx), (0..<size).contains(yy) { set(xx, yy, distance != 2 && distance != 4) }
                }
            }
        }

        mutating func drawFormatBits(mask: Int) {
            let data = 0 << 3 | mask // level M is 00
            var rem = data
            for _ in 0..<10 { rem = (rem << 1) ^ ((rem >> 9) * 0x537) }
            let bits = (data << 10 | rem) ^ 0x5412
            func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
            for i in 0...5 { set(8, i, bit(i)) }
            set(8, 7, bit(6))
            set(8, 8, bit(7))
            set(7, 8, bit(8))
            for i in 9..<15 { set(14 - i, 8, bit(i)) }
            for i in 0..<8 { set(size - 1 - i, 8, bit(i)) }
            for i in 8..<15 { set(8, size - 15 + i, bit(i)) }
            set(8, size - 8, true)
        }

        mutating func drawCodewords(_ data: [UInt8]) {
            var i = 0
            var right = size - 1
            while right >= 1 {
                if right == 6 { right = 5 }
                for vert in 0..<size {
                    for j in 0..<2 {
                        let x = right - j
                        let upward = (right + 1) & 2 == 0
                        let y = upward ? size - 1 - vert : vert
                        if !isFunction[y][x], i < data.count * 8 {
                            modules[y][x] = (data[i >> 3] >> (7 - (i & 7))) & 1 == 1
                            i += 1
                        }
                    }
                }
                right -= 2
            }
        }

        mutating func applyMask(_ mask: Int) {
            for y in 0..<size {
                for x in 0..<size where !isFunction[y][x] {
                    let invert = switch mask {
                    case 0: (x + y) % 2 == 0
                    case 1: y % 2 == 0
                    case 2: x % 3 == 0
                    case 3: (x + y) % 3 == 0
                    case 4: (x / 3 + y / 2) % 2 == 0
                    case 5: x * y % 2 + x * y % 3 == 0
                    case 6: (x * y % 2 + x * y % 3) % 2 == 0
                    default: ((x + y) % 2 + x * y % 3) % 2 == 0
                    }
                    if invert { modules[y][x].toggle() }
                }
            }
        }

        /// The standard's penalty rules 1, 2 and 4 (runs, 2×2 blocks, balance); any mask is valid, this only
        /// picks one that scans well.
        func penalty() -> Int {
            var result = 0
            for line in 0..<size {
                var runRow = 1, runColumn = 1
                for i in 1..<size {
                    if modules[line][i] == modules[line][i - 1] { runRow += 1 } else { runRow = 1 }
                    if runRow == 5 { result += 3 } else if runRow > 5 { result += 1 }
                    if modules[i][line] == modules[i - 1][line] { runColumn += 1 } else { runColumn = 1 }
                    if runColumn == 5 { result += 3 } else if runColumn > 5 { result += 1 }
                }
            }
            for y in 0..<size - 1 {
                for x in 0..<size - 1 {
                    let c = modules[y][x]
                    if c == modules[y][x + 1], c == modules[y + 1][x], c == modules[y + 1][x + 1] { result += 3 }
                }
            }
            let dark = modules.reduce(0) { $0 + $1.filter { $0 }.count }
            let total = size * size
            let k = (abs(dark * 20 - total * 10) + total - 1) / total - 1
            result += max(0, k) * 10
            return result
        }
    }

    static func alignmentPositions(_ version: Int) -> [Int] {
        guard version > 1 else { return [] }
        let n = version / 7 + 2
        let size = version * 4 + 17
        let step = (version * 8 + n * 3 + 5) / (n * 4 - 4) * 2
        var result = Array(repeating: 6, count: n)
        var position = size - 7
        for i in stride(from: n - 1, through: 1, by: -1) {
            result[i] = position
            position -= step
        }
        return result
    }

    /// The code for a terminal: two rows of modules per line in half blocks (dark is ink), with a quiet
    /// zone of 4 modules. `ansi` paints ink black on white so it scans on a dark terminal too.
    public func terminalText(ansi: Bool) -> String {
        let quiet = 4
        let full = size + 2 * quiet
        func dark(_ x: Int, _ y: Int) -> Bool {
            let mx = x - quiet, my = y - quiet
            guard (0..<size).contains(mx), (0..<size).contains(my) else { return false }
            return modules[my][mx]
        }
        var lines: [String] = []
        for y in stride(from: 0, to: full, by: 2) {
            var line = ansi ? "\u{1b}[30;107m" : ""
            for x in 0..<full {
                switch (dark(x, y), dark(x, y + 1)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            if ansi { line += "\u{1b}[0m" }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

enum ReedSolomon {
    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var z = 0
        for i in stride(from: 7, through: 0, by: -1) {
            z = (z << 1) ^ ((z >> 7) * 0x11D)
            z ^= ((Int(y) >> i) & 1) * Int(x)
        }
        return UInt8(z)
    }

    static func divisor(degree: Int) -> [UInt8] {
        var result = Array(repeating: UInt8(0), count: degree - 1) + [1]
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                result[j] = multiply(result[j], root)
                if j + 1 < degree { result[j] ^= result[j + 1] }
            }
            root = multiply(root, 0x02)
        }
        return result
    }

    static func remainder(_ data: [UInt8], divisor: [UInt8]) -> [UInt8] {
        var result = Array(repeating: UInt8(0), count: divisor.count)
        for b in data {
            let factor = b ^ result.removeFirst()
            result.append(0)
            for i in result.indices { result[i] ^= multiply(divisor[i], factor) }
        }
        return result
    }
}
