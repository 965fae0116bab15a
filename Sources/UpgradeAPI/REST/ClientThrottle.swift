import Synchronization

/// Per-client limit on failed credential checks (wrong passwords, wrong step-up codes, attempts on
/// a locked username), the counterpart of the per-username `LockoutPolicy`: that one stops guessing
/// one account's password, this one stops one client spraying guesses across many usernames.
///
/// A client may fail `policy.failures` times in a burst; after that one further failure is allowed
/// every `window / failures` seconds (a generic cell rate algorithm: one "theoretical arrival time"
/// per client, no timers). While a client is over the limit its credential requests are refused
/// with `rate-limited` before anything is read or hashed, and those refusals are not counted, so a
/// throttled client cannot extend its own wait. Successes do not reset the count: a sprayer's
/// occasional hit must not buy it more guesses.
///
/// Clients are counted by `HTTPClientAddress.throttleKey` (an IPv6 client by its /64). At most
/// `capacity` clients are tracked; when the table is full, clients whose debt is paid are dropped
/// (at most once a second), and if none is, a new client goes uncounted (the per-username lockout still applies) and
/// ``untrackedFailures`` says so. Time is a Unix second passed in by the caller.
///
/// The check comes before the credential and the count after it, so requests already in flight when
/// a client reaches its limit still finish and count: the overshoot is at most the requests one
/// client has queued or running at that moment, which the worker pool and its queue bound.
public final class ClientThrottle: Sendable {
    public struct Policy: Sendable, Hashable, CustomStringConvertible {
        /// Failures allowed in a burst.
        public let failures: Int
        /// Seconds over which `failures` further failures are allowed once the burst is spent.
        public let window: Int64

        public static let `default` = Policy(validFailures: 20, window: 600)

        /// Accepts 1...100 000 failures over 1 s...7 days.
        public init?(failures: Int, window: Int64) {
            guard (1...100_000).contains(failures), (1...604_800).contains(window) else { return nil }
            self.init(validFailures: failures, window: window)
        }

        private init(validFailures failures: Int, window: Int64) {
            self.failures = failures
            self.window = window
        }

        /// `FAILURES/SECONDS`, e.g. `20/600`.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) } }),
                let failures = Int(parts[0]), let window = Int64(parts[1])
            else { return nil }
            self.init(failures: failures, window: window)
        }

        public var description: String { "\(failures)/\(window)" }

        /// Milliseconds between further failures once the burst is spent.
        var interval: Int64 { max(1, window * 1000 / Int64(failures)) }
        var windowMilliseconds: Int64 { window * 1000 }
    }

    public let policy: Policy
    public let capacity: Int
    private let state: Mutex<State>

    private struct State {
        /// Per client: when its debt of failures is paid off, in Unix milliseconds.
        var paidOffAt: [HTTPClientAddress: Int64] = [:]
        var untracked = 0
        /// The last full-table sweep: at most one per second, so a flood of new clients costs a
        /// sweep of the table once a second, not once per failure.
        var sweptAt: Int64 = .min
    }

    public init(policy: Policy = .default, capacity: Int = 100_000) {
        self.policy = policy
        self.capacity = max(1, capacity)
        self.state = Mutex(State())
    }

    /// Seconds `client` must wait before its next credential check, or nil if it may go on.
    public func retryAfter(_ client: HTTPClientAddress, now: Int64) -> Int64? {
        let key = client.throttleKey
        let nowMs = now * 1000
        let paidOffAt = state.withLock { $0.paidOffAt[key] } ?? nowMs
        // Room for one more failure while the debt is at most `failures - 1` intervals.
        let allowedFrom = paidOffAt - (policy.windowMilliseconds - policy.interval)
        guard allowedFrom > nowMs else { return nil }
        return max(1, (allowedFrom - nowMs + 999) / 1000)
    }

    /// Counts one failed credential check by `client`.
    public func recordFailure(_ client: HTTPClientAddress, now: Int64) {
        let key = client.throttleKey
        let nowMs = now * 1000
        state.withLock { state in
            if state.paidOffAt[key] == nil && state.paidOffAt.count >= capacity {
                if now > state.sweptAt {
                    state.sweptAt = now
                    state.paidOffAt = state.paidOffAt.filter { $0.value > nowMs }
                }
                guard state.paidOffAt.count < capacity else {
                    state.untracked += 1
                    return
                }
            }
            let from = max(state.paidOffAt[key] ?? nowMs, nowMs)
            state.paidOffAt[key] = from + policy.interval
        }
    }

    /// Clients currently tracked (some may have paid off their debt and wait to be pruned).
    public var trackedClients: Int { state.withLock { $0.paidOffAt.count } }

    /// Failures that went uncounted because the table was full of clients still in debt.
    public var untrackedFailures: Int { state.withLock { $0.untracked } }
}
