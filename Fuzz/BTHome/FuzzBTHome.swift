// libFuzzer target: BTHome v2 service data (plaintext adverts) through `BTHome.parse` and a device's
// receive rules (`BTHomeDeviceState`). The input is the service data, device-info byte first (the
// bytes under UUID 0xFCD2), as the seeds in Fuzz/corpus/bthome are. Run by scripts/fuzz.sh.
import DoseTapCore
import DoseTapFuzzSupport
import Foundation

private let address = BTHomeAddress("A4:C1:38:8D:18:B2")!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBTHome(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size).bytes

    switch BTHome.parse(input, address: address, decryptor: nil) {
    case .failure(let rejection):
        _ = rejection.description
        _ = rejection.cause
    case .success(let advert):
        fuzzCheck(!advert.objects.isEmpty, "an accepted advert has objects")
        fuzzCheck(advert.encryptionCounter == nil, "a plaintext parse has no counter")
        var previous = -1
        for object in advert.objects {
            fuzzCheck(object.offset > previous && object.offset < input.count, "object offsets ascend inside the data")
            previous = object.offset
        }
        _ = advert.packetID
        _ = advert.battery
        for (_, event) in advert.events { fuzzCheck(event != .none && event.isEvent, "a beacon (3A 00) is never an event") }
    }

    // The same advert twice within the silence window: the second one never counts again.
    var state = BTHomeDeviceState(address: address)
    let start = Date(timeIntervalSince1970: 1_700_000_000)
    let first = state.receive(input, at: start)
    let second = state.receive(input, at: start.addingTimeInterval(1))
    if case .accepted(let advert) = first, advert.packetID != nil {
        if case .accepted = second { fuzzCheck(false, "a repeated packet id was accepted twice") }
    }
    _ = state.receive(input, at: start.addingTimeInterval(10))
    return 0
}
