import Synchronization

/// Raises the failure floor for a while after a refused check took longer than it.
///
/// The configured floor covers the costliest admitted check with a margin. On a loaded machine
/// every check's wall time stretches, the costliest most, and a refusal whose check overran the
/// floor would be answered when ready, with its own timing, telling again which hash the account
/// holds. So an overrun raises the floor of every refusal to a quarter more than the slowest one
/// seen, until a minute passes without another overrun. The raise is capped at four times the
/// configured floor, so one stalled request cannot hold every refusal for long; beyond the cap the
/// overruns are still counted (`onFailureFloorOverrun`). A floor of zero is off and stays off.
final class FailureFloorTracker: Sendable {
    static let window: Duration = .seconds(60)

    private struct State {
        var slowest: Duration = .zero
        var lastOverrun: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    init() {}

    /// The floor for a refusal whose check took `elapsed` up to `now`, and whether it overran
    /// `configured`.
    func floor(
        configured: Duration,
        elapsed: Duration,
        now: ContinuousClock.Instant
    ) -> (floor: Duration, overran: Bool) {
        guard configured > .zero else { return (.zero, false) }
        let overran = elapsed > configured
        let slowest = state.withLock { state -> Duration in
            if let last = state.lastOverrun, now - last > Self.window { state = State() }
            if overran {
                state.slowest = max(state.slowest, elapsed)
                state.lastOverrun = now
            }
            return state.slowest
        }
        return (max(configured, min(slowest * 5 / 4, configured * 4)), overran)
    }
}
