import DoseTapCore
import Foundation

// The value types of the HID-remote path (BLE camera shutters read through evdev), and the two pure
// state machines under the reader: `HIDKeyDecoder` (one event node's records → down/up) and
// `HIDRemoteMerger` (the nodes of one remote → one logical button). No I/O here.

/// One `/dev/input/event*` node of a Bluetooth HID remote, as udev describes it.
///
/// A remote can have several nodes: an AB Shutter3 shows up as "AB Shutter3" (its keyboard
/// collection, KEY_ENTER) and "AB Shutter3 Consumer Control" (KEY_VOLUMEUP), both with the same
/// `uniq` address. They are one button: `HIDButtonSource` merges them by address.
public struct HIDRemote: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// "event5".
    public var sysname: String
    /// "/dev/input/event5".
    public var devnode: String
    /// The remote's Bluetooth address, "AA:BB:CC:DD:EE:FF" (from the input device's `uniq`).
    public var address: String
    /// The input device's name ("AB Shutter3", "AB Shutter3 Consumer Control"); trailing blanks trimmed.
    public var name: String?
    /// The local adapter's address (the input device's `phys`), when it is one.
    public var adapter: String?
    /// USB-style ids from `id/vendor` and `id/product` (0x248a / 0x8266 for an AB Shutter3).
    public var vendorID: UInt16?
    public var productID: UInt16?
    /// udev says it is a full keyboard (`ID_INPUT_KEYBOARD=1`): more keys than a remote needs.
    public var looksLikeKeyboard: Bool

    public init(sysname: String, devnode: String, address: String, name: String? = nil, adapter: String? = nil,
                vendorID: UInt16? = nil, productID: UInt16? = nil, looksLikeKeyboard: Bool = false) {
        self.sysname = sysname
        self.devnode = devnode
        self.address = address
        self.name = name
        self.adapter = adapter
        self.vendorID = vendorID
        self.productID = productID
        self.looksLikeKeyboard = looksLikeKeyboard
    }

    public var description: String {
        var parts = [devnode, address]
        if let name { parts.append("\"\(DisplayText.escaped(name))\"") } // the name the remote gives itself
        if let vendorID, let productID { parts.append(String(format: "%04x:%04x", vendorID, productID)) }
        return parts.joined(separator: ", ")
    }

    /// "aa:bb:cc:dd:ee:ff", "AA-BB-…" (optionally quoted or padded, as sysfs and udev write it) →
    /// "AA:BB:CC:DD:EE:FF"; nil for anything that is not a device's address (`BluetoothAddress`: all-zero,
    /// broadcast, multicast).
    public static func normalize(address text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "\"\0")))
        return BluetoothAddress.canonical(trimmed)
    }
}

/// Why a remote's node stopped delivering.
public enum HIDDisconnectReason: Sendable, Equatable, CustomStringConvertible {
    /// udev reported the node removed (the remote disconnected, usually to save its battery).
    case removed
    /// read(2) failed with ENODEV: the kernel tore the device down under us.
    case deviceGone
    /// read(2) returned end of file (a pipe or pseudo-terminal standing in for the node was closed).
    case endOfStream
    /// Any other read error.
    case readError(EvdevError)
    /// The address left the allowlist (`setAddresses`).
    case notAllowed
    /// The stream ended (the consumer stopped listening, or the source was shut down).
    case stopped

    public var description: String {
        switch self {
        case .removed: "removed"
        case .deviceGone: "the device went away (ENODEV)"
        case .endOfStream: "end of stream"
        case .readError(let error): "\(error)"
        case .notAllowed: "no longer in the button list"
        case .stopped: "stopped"
        }
    }
}

/// A node that could not be used.
public struct HIDButtonError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    /// The failed system call, when there was one.
    public var underlying: EvdevError?

    public init(_ description: String, underlying: EvdevError? = nil) {
        self.description = description
        self.underlying = underlying
    }
}

/// What `HIDButtonSource.events(addresses:)` delivers, in order.
public enum HIDButtonEvent: Sendable, Equatable {
    /// A node of an allowed remote was opened and is being read. `grabbed` is false when EVIOCGRAB
    /// failed: DoseTap still reads the keys, but they also reach the desktop (a logged warning says why).
    case connected(HIDRemote, grabbed: Bool)
    /// A key went down or up, with the kernel's timestamp. One logical button per remote: every key
    /// of every node of that address counts, and overlapping keys make one press.
    case signal(address: String, KeySignal)
    /// The node stopped. `interruptedPress` is true when the remote's button was down and no `.up`
    /// will come for it: the consumer must drop that press (start a fresh `GestureRecognizer` for the
    /// address) rather than let it grow into a hold.
    case disconnected(HIDRemote, reason: HIDDisconnectReason, interruptedPress: Bool)
    /// A node of an allowed remote could not be opened (permission, a stale node, the wrong device).
    case unavailable(HIDRemote, HIDButtonError)
}

/// One `struct input_event`, decoded.
public struct InputEventRecord: Sendable, Equatable, Hashable {
    public var seconds: Int64
    public var microseconds: Int64
    public var type: UInt16
    public var code: UInt16
    public var value: Int32

    public init(seconds: Int64, microseconds: Int64, type: UInt16, code: UInt16, value: Int32) {
        self.seconds = seconds
        self.microseconds = microseconds
        self.type = type
        self.code = code
        self.value = value
    }

    /// The kernel timestamp (evdev's default clock, CLOCK_REALTIME) as a `Date`.
    public var date: Date { Self.date(seconds: seconds, microseconds: microseconds) }

    public static func date(seconds: Int64, microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(seconds) + Double(microseconds) / 1_000_000)
    }

    // The event types and codes the decoder looks at (linux/input-event-codes.h).
    public static let evSyn: UInt16 = 0x00
    public static let evKey: UInt16 = 0x01
    public static let evMsc: UInt16 = 0x04
    public static let synReport: UInt16 = 0
    public static let synDropped: UInt16 = 3
}

/// One event node's records → `.down`/`.up`, the way a single logical button sees them.
///
/// - Only `EV_KEY` counts, and any key code does (remotes differ: KEY_VOLUMEUP, KEY_ENTER, KEY_PLAYPAUSE,
///   BTN_LEFT…). Overlapping keys are one press: `.down` when the first key goes down, `.up` when the
///   last one comes up.
/// - Value 2 (autorepeat while held) is ignored: a held key's repeats never create presses.
/// - `EV_SYN`/`EV_MSC` are ignored, except `SYN_DROPPED`: the kernel's buffer overflowed, so every
///   event up to the next `SYN_REPORT` is discarded and the held keys are re-read from the device
///   (`EVIOCGKEY`) at that report. When they cannot be read, every key counts as released.
/// - A key already down when the node was opened (`init(initiallyHeld:)`) produces nothing, not even
///   its release: the press began before we were listening.
public struct HIDKeyDecoder: Sendable, Equatable {
    public private(set) var held: Set<UInt16>
    private var ignoredHeld: Set<UInt16>
    private var dropping = false

    public init(initiallyHeld: Set<UInt16> = []) {
        held = []
        ignoredHeld = initiallyHeld
    }

    /// The button is down.
    public var isDown: Bool { !held.isEmpty }

    /// `keyState` is asked only when resynchronising after `SYN_DROPPED` (nil: unknown).
    public mutating func feed(_ event: InputEventRecord, keyState: () -> Set<UInt16>? = { nil }) -> [KeySignal] {
        if event.type == InputEventRecord.evSyn {
            if event.code == InputEventRecord.synDropped {
                dropping = true
                return []
            }
            if event.code == InputEventRecord.synReport, dropping {
                dropping = false
                return resync(to: keyState() ?? [], at: event.date)
            }
            return []
        }
        guard !dropping, event.type == InputEventRecord.evKey else { return [] }
        switch event.value {
        case 1:
            if ignoredHeld.contains(event.code) { return [] }
            let wasUp = held.isEmpty
            held.insert(event.code)
            return wasUp ? [.down(at: event.date)] : []
        case 0:
            if ignoredHeld.remove(event.code) != nil { return [] }
            guard held.remove(event.code) != nil else { return [] }
            return held.isEmpty ? [.up(at: event.date)] : []
        default:
            return []   // 2: autorepeat
        }
    }

    /// After lost events: adopt the keys that are down now, with the edge (if any) at `date`.
    mutating func resync(to now: Set<UInt16>, at date: Date) -> [KeySignal] {
        ignoredHeld.formIntersection(now)
        let wasDown = !held.isEmpty
        held = now.subtracting(ignoredHeld)
        switch (wasDown, !held.isEmpty) {
        case (false, true): return [.down(at: date)]
        case (true, false): return [.up(at: date)]
        default: return []
        }
    }
}

/// The nodes of one remote → one logical button per address: `.down` when the first node goes down,
/// `.up` when the last one comes up.
public struct HIDRemoteMerger: Sendable, Equatable {
    private var down: [String: Set<String>] = [:]

    public init() {}

    /// The merged signal for `address`, or nil when another node already holds the button down (or
    /// still does).
    public mutating func feed(address: String, node: String, _ signal: KeySignal) -> KeySignal? {
        switch signal {
        case .down:
            var nodes = down[address] ?? []
            let first = nodes.isEmpty
            nodes.insert(node)
            down[address] = nodes
            return first ? signal : nil
        case .up:
            guard var nodes = down[address], nodes.remove(node) != nil else { return nil }
            down[address] = nodes.isEmpty ? nil : nodes
            return nodes.isEmpty ? signal : nil
        case .press:
            return signal
        }
    }

    /// Forgets a node that went away. True when that leaves the button with a press that will never
    /// be released (it was the last node holding it down).
    public mutating func remove(address: String, node: String) -> Bool {
        guard var nodes = down[address], nodes.remove(node) != nil else { return false }
        down[address] = nodes.isEmpty ? nil : nodes
        return nodes.isEmpty
    }

    public func isDown(_ address: String) -> Bool { !(down[address]?.isEmpty ?? true) }
}
