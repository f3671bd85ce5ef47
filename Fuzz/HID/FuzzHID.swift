// libFuzzer target: the HID event decoder. Input: a header, then `struct input_event` records as
// read(2) returns them from /dev/input/event* (dosetap_input_event_size() bytes each, 24 here):
//
//   byte 0      bits 0-1: how many keys are held when the node is opened (`initiallyHeld`)
//               bits 2-3: what EVIOCGKEY answers after SYN_DROPPED (0: cannot say, 1: nothing held,
//                         2: the held keys, 3: one key from the header)
//   bytes 1-8   four key codes (little endian): the initially held keys, then the EVIOCGKEY key
//   the rest    records; each goes to one of two nodes of the same remote (odd seconds: node B), and
//               a record of type 0xFFFF removes its node (as a udev "remove" would)
//
// Each node has an `HIDKeyDecoder`; `HIDRemoteMerger` merges them. Invariants: each decoder's
// signals alternate down/up starting with down and agree with `isDown`; so do the merged signals, and
// `remove` reports an interrupted press exactly when the merged button was down.
import CLinuxInput
import DoseTapCore
import DoseTapFuzzSupport
import DoseTapLinux
import Foundation

private let recordSize = dosetap_input_event_size()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHID(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.byte()
    let codes = (0..<4).map { _ in UInt16(truncatingIfNeeded: input.uint(2)) }
    let initiallyHeld = Set(codes.prefix(Int(options & 0x03)))
    let keyStateMode = (options >> 2) & 0x03
    let address = "AA:BB:CC:DD:EE:FF"
    let nodes = ["event5", "event6"]

    var decoders = [HIDKeyDecoder(initiallyHeld: initiallyHeld), HIDKeyDecoder(initiallyHeld: initiallyHeld)]
    var nodeDown = [false, false]
    var merger = HIDRemoteMerger()
    var mergedDown = false

    let records = input.rest()
    records.withUnsafeBytes { buffer in
        var offset = 0
        while offset + recordSize <= buffer.count {
            var type: UInt16 = 0, code: UInt16 = 0, value: Int32 = 0, seconds: Int64 = 0, microseconds: Int64 = 0
            dosetap_input_event_unpack(buffer.baseAddress! + offset, &type, &code, &value, &seconds, &microseconds)
            offset += recordSize
            let node = Int(seconds & 1)

            if type == 0xFFFF {
                let interrupted = merger.remove(address: address, node: nodes[node])
                fuzzCheck(interrupted == (mergedDown && nodeDown[node] && !nodeDown[1 - node]),
                          "remove reports an interrupted press exactly when this node held the button alone")
                if interrupted { mergedDown = false }
                decoders[node] = HIDKeyDecoder(initiallyHeld: initiallyHeld)
                nodeDown[node] = false
                continue
            }

            let record = InputEventRecord(seconds: seconds, microseconds: microseconds, type: type, code: code, value: value)
            let held = decoders[node].held
            let signals = decoders[node].feed(record) {
                switch keyStateMode {
                case 0: nil
                case 1: []
                case 2: held
                default: [codes[3]]
                }
            }
            for signal in signals {
                switch signal {
                case .down:
                    fuzzCheck(!nodeDown[node], "two downs in a row on one node")
                    nodeDown[node] = true
                case .up:
                    fuzzCheck(nodeDown[node], "an up without a down on one node")
                    nodeDown[node] = false
                case .press:
                    fuzzCheck(false, "the key decoder never makes a press")
                }
                if let merged = merger.feed(address: address, node: nodes[node], signal) {
                    switch merged {
                    case .down:
                        fuzzCheck(!mergedDown, "two merged downs in a row")
                        mergedDown = true
                    case .up:
                        fuzzCheck(mergedDown, "a merged up without a down")
                        mergedDown = false
                    case .press:
                        break
                    }
                }
            }
            fuzzCheck(decoders[node].isDown == nodeDown[node], "isDown agrees with the signals")
            fuzzCheck(merger.isDown(address) == mergedDown, "the merger's isDown agrees with its signals")
        }
    }
    return 0
}
