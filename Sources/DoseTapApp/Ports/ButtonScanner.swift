import DoseTapCore
import Foundation

/// Where `button scan` and the dashboard's scan look for buttons (the machine's: BlueZ discovery and the
/// kernel's HID remotes, `BlueZButtonScanner`; a test's: a list).
public protocol ButtonScanner: Sendable {
    /// The adverts heard in `seconds`, one per address (each merged from all heard, `AdvertSightings`), at
    /// most `keeping` addresses.
    /// Errors: `UseCaseError.unavailable` with one line naming the fix ("cannot reach BlueZ on the system
    /// bus — is bluetoothd running? …", "scan failed: …").
    func adverts(seconds: Int, keeping: Int) async throws -> [BLEAdvert]
    /// The HID remotes already connected (they no longer advertise; the kernel has their input nodes).
    func connectedRemotes() -> [(address: String, name: String?)]
}
