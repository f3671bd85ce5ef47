/// Flic 2's link layer over GATT (facts from the "Flic 2 Protocol Specification" as the vendor's clients implement
/// it): every write to the button's write characteristic and every notification from its notify characteristic is
/// one frame, a header byte and up to MTU − 4 bytes of a packet.
///
/// Header: bits 0–4 the logical connection's id (0 before the button assigned one), bit 5 "newly assigned" (the
/// button gives the id in its first answer), bit 7 "more fragments follow". A packet (opcode, fields, and after
/// verification a 5-byte MAC) is at most 128 bytes; a longer one is split into fragments, each with the header.
public struct Flic2FrameHeader: Sendable, Equatable {
    public var connectionID: UInt8
    public var newlyAssigned: Bool
    public var moreFragments: Bool

    public init(connectionID: UInt8, newlyAssigned: Bool = false, moreFragments: Bool = false) {
        self.connectionID = connectionID & 0x1F
        self.newlyAssigned = newlyAssigned
        self.moreFragments = moreFragments
    }

    public init(byte: UInt8) {
        connectionID = byte & 0x1F
        newlyAssigned = byte & 0x20 != 0
        moreFragments = byte & 0x80 != 0
    }

    public var byte: UInt8 { connectionID | (newlyAssigned ? 0x20 : 0) | (moreFragments ? 0x80 : 0) }
}

/// One whole packet from the button, with the header of its last frame.
public struct Flic2Packet: Sendable, Equatable {
    public var header: Flic2FrameHeader
    /// Opcode first; a verified session's packets end with their 5-byte MAC.
    public var bytes: [UInt8]
    public var opcode: UInt8 { bytes[0] }

    public init(header: Flic2FrameHeader, bytes: [UInt8]) {
        self.header = header
        self.bytes = bytes
    }
}

public enum Flic2FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A notification of fewer than 2 bytes (a header and nothing).
    case truncated(Int)
    /// The fragments add up to more than a packet can be.
    case oversized(Int)
    /// A fragment of another connection (or that differs in claiming a newly assigned id) in the middle of a packet.
    case interleaved

    public var description: String {
        switch self {
        case .truncated(let n): "a \(n)-byte frame (a frame is a header and at least one byte)"
        case .oversized(let n): "fragments of \(n) bytes (a packet is at most \(Flic2Frame.maxPacket))"
        case .interleaved: "a fragment of another packet arrived in the middle of one"
        }
    }
}

public enum Flic2Frame {
    /// The longest packet (the vendor's clients keep a 128-byte buffer).
    public static let maxPacket = 128
    /// GATT's smallest ATT MTU: what a link that never negotiated has.
    public static let defaultMTU = 23

    /// The frames to write for one packet on a link with this ATT MTU (3 bytes of ATT header, 1 of ours).
    public static func split(_ packet: [UInt8], connectionID: UInt8, mtu: Int) -> [[UInt8]] {
        let room = max(1, min(mtu, 512) - 4)
        var frames: [[UInt8]] = []
        var offset = 0
        repeat {
            let end = min(packet.count, offset + room)
            let header = Flic2FrameHeader(connectionID: connectionID, moreFragments: end < packet.count)
            frames.append([header.byte] + packet[offset..<end])
            offset = end
        } while offset < packet.count
        return frames
    }
}

/// Puts the button's notifications back together into packets. Fragments have no numbers: a fragment lost, repeated
/// or out of order makes a different packet, which the MAC (or, before verification, the packet's own checks)
/// refuses.
public struct Flic2Reassembler: Sendable {
    private var pending: [UInt8] = []
    private var pendingHeader: Flic2FrameHeader?

    public init() {}

    /// The packet this notification completes, nil while fragments are still coming, or why it cannot be one (the
    /// fragments so far are dropped).
    public mutating func receive(_ frame: some Collection<UInt8>) -> Result<Flic2Packet?, Flic2FrameError> {
        let frame = Array(frame)
        guard frame.count >= 2 else {
            reset()
            return .failure(.truncated(frame.count))
        }
        let header = Flic2FrameHeader(byte: frame[0])
        if let first = pendingHeader, first.connectionID != header.connectionID || first.newlyAssigned != header.newlyAssigned {
            reset()
            return .failure(.interleaved)
        }
        guard pending.count + frame.count - 1 <= Flic2Frame.maxPacket else {
            let size = pending.count + frame.count - 1
            reset()
            return .failure(.oversized(size))
        }
        pending += frame[1...]
        if header.moreFragments {
            if pendingHeader == nil { pendingHeader = header }
            return .success(nil)
        }
        let packet = Flic2Packet(header: pendingHeader.map { Flic2FrameHeader(connectionID: $0.connectionID, newlyAssigned: $0.newlyAssigned) } ?? header,
                                 bytes: pending)
        reset()
        return .success(packet)
    }

    public mutating func reset() {
        pending = []
        pendingHeader = nil
    }
}

/// Where Flic 2 lives in GATT.
public enum GATTFlic2 {
    public static let serviceUUID = "00420000-8f59-4420-870d-84f3b617e493"
    public static let writeUUID = "00420001-8f59-4420-870d-84f3b617e493"
    public static let notifyUUID = "00420002-8f59-4420-870d-84f3b617e493"
}
