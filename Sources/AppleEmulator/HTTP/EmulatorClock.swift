import Foundation
import Synchronization

/// The emulator's time: the wall clock plus an offset that `POST /emulator/clock/advance` moves
/// forward, so code expiry (5 minutes), access-token expiry (1 hour) and the 60-day transfer
/// window can be played without waiting.
public final class EmulatorClock: Sendable {
    private let offset = Atomic<Int64>(0)

    public init() {}

    /// Unix seconds as the emulator sees them.
    public var now: Int64 {
        Int64(Date().timeIntervalSince1970) + offset.load(ordering: .relaxed)
    }

    /// Moves the emulator's time forward (never back: Apple's time does not go backwards).
    public func advance(seconds: Int64) {
        precondition(seconds >= 0, "the emulator's clock only moves forward")
        offset.add(seconds, ordering: .relaxed)
    }
}
