import Synchronization

/// What the rows of one batch share while they run: the row limit, and the reason to stop (set by
/// the first row that finds the configuration refused, read by the feeder and by rows about to call
/// Apple).
final class TransferBatchControl: Sendable {
    private struct State {
        var permits: Int?
        var limitReached = false
        var stop: TransferBatchSummary.Stop?
    }

    private let state: Mutex<State>

    init(limit: Int?) {
        state = Mutex(State(permits: limit))
    }

    /// Takes one unit of the row limit for a row that needs work; false once the limit is used up.
    func takePermit() -> Bool {
        state.withLock { state in
            guard let permits = state.permits else { return true }
            guard permits > 0 else {
                state.limitReached = true
                return false
            }
            state.permits = permits - 1
            return true
        }
    }

    var limitReached: Bool { state.withLock { $0.limitReached } }

    /// The first reason given wins: it is the one that explains the others.
    func requestStop(_ stop: TransferBatchSummary.Stop) {
        state.withLock { state in
            if state.stop == nil { state.stop = stop }
        }
    }

    var stop: TransferBatchSummary.Stop? { state.withLock { $0.stop } }
}
