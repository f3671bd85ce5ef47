import DoseTapCore
import DoseTapStore
import Foundation

/// What a person does to the household from this device (#51 finding 7): forget a device that left it.
public struct HouseholdUseCases: Sendable {
    private let store: DataStore
    private let clock: any WallClock

    public init(store: DataStore, clock: any WallClock) {
        self.store = store
        self.clock = clock
    }

    /// What `forget` did.
    public struct Forgot: Sendable, Equatable {
        public var device: String
        /// Occurrences of its plans this device held and dropped.
        public var occurrences: Int
        /// It had been forgotten before.
        public var again: Bool

        public init(device: String, occurrences: Int, again: Bool) {
            self.device = device
            self.occurrences = occurrences
            self.again = again
        }
    }

    /// Forgets `text` (a device name, as its `[household] device`): its plans held here are dropped, with their answers
    /// and slots, and any plan of it heard later is ignored — until it is heard online after now. `me` is this device:
    /// it cannot forget itself.
    public func forget(_ text: String, me: String) throws -> Forgot {
        let device: String
        do { device = try BackupTarget.deviceName(text) } catch { throw UseCaseError(error.description) }
        guard device != me else {
            throw UseCaseError("'\(device)' is this device ([household] device): forget it on the other devices of the household")
        }
        do {
            let done = try HouseholdRepository(database: try store.open()).forget(device, at: clock.now())
            return Forgot(device: device, occurrences: done.occurrences, again: done.again)
        } catch {
            throw UseCaseError.unavailable("could not forget \(device): \(error)")
        }
    }
}
