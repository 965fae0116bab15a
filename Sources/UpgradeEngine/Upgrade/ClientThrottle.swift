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
/// The count lives in the database (`ClientThrottleStore`), so every server on one database counts
/// a client's failures together: a client cannot multiply its allowance by spreading its requests
/// over instances. `Policy` decides (pure, time passed in); the store keeps one value per client,
/// by a key the caller derives from its address (an IPv6 client by its /64). Rows whose debt is
/// paid are deleted as failures are counted, at most once a second per process, so the table holds
/// about the clients that failed within the last window.
///
/// The check comes before the credential and the count after it, so requests already in flight when
/// a client reaches its limit still finish and count: the overshoot is at most the requests one
/// client has queued or running at that moment, across the instances it reaches.
///
/// Wrong admin tokens are counted by a second throttle on the same table under keys of their own
/// (`Namespace.adminTokens`), so neither count can spend the other's allowance.
public final class ClientThrottle: Sendable {
    /// What a throttle counts; it prefixes the client key in the store, so two throttles on one
    /// database keep separate rows for one client.
    public struct Namespace: Sendable, Hashable {
        let keyPrefix: String

        /// Wrong passwords, tickets and step-up codes (`UPGRADE_CLIENT_THROTTLE`).
        public static let credentials = Namespace(keyPrefix: "")
        /// Wrong admin bearer tokens (`UPGRADE_ADMIN_THROTTLE`). No client key (an address) starts
        /// with a letter followed by a space.
        public static let adminTokens = Namespace(keyPrefix: "admin ")
    }

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

        /// Seconds a client whose debt is paid off at `paidOffAt` (Unix milliseconds; nil for a
        /// client with no debt) must wait at `now` (Unix seconds) before its next credential check,
        /// or nil if it may go on.
        public func retryAfter(paidOffAt: Int64?, now: Int64) -> Int64? {
            let nowMs = now * 1000
            // Room for one more failure while the debt is at most `failures - 1` intervals.
            let allowedFrom = (paidOffAt ?? nowMs) - (windowMilliseconds - interval)
            guard allowedFrom > nowMs else { return nil }
            return max(1, (allowedFrom - nowMs + 999) / 1000)
        }

        /// When the client's debt is paid off once one more failure at `now` is counted.
        public func paidOffAt(afterFailureFrom paidOffAt: Int64?, now: Int64) -> Int64 {
            let nowMs = now * 1000
            return max(paidOffAt ?? nowMs, nowMs) + interval
        }
    }

    public let policy: Policy
    public let namespace: Namespace
    private let store: any UpgradeStore
    /// The last sweep of paid-off rows by this process, in Unix seconds: at most one a second, so a
    /// flood of failures costs one range delete a second, not one per failure.
    private let sweptAt = Mutex<Int64>(.min)

    public init(policy: Policy = .default, store: any UpgradeStore, namespace: Namespace = .credentials) {
        self.policy = policy
        self.store = store
        self.namespace = namespace
    }

    /// Seconds the client with `clientKey` must wait before its next credential check, or nil if it
    /// may go on, read in the caller's transaction.
    public func retryAfter(clientKey: String, in tx: any StoreTransaction, now: Int64) throws -> Int64? {
        policy.retryAfter(
            paidOffAt: try tx.clientThrottlePaidOffAt(clientKey: namespace.keyPrefix + clientKey),
            now: now
        )
    }

    /// Counts one failed credential check by the client with `clientKey`, in the caller's write.
    public func recordFailure(clientKey: String, in tx: any StoreTransaction, now: Int64) throws {
        let sweep = sweptAt.withLock { last in
            guard now > last else { return false }
            last = now
            return true
        }
        let key = namespace.keyPrefix + clientKey
        if sweep { try tx.deletePaidClientThrottles(now: now * 1000) }
        let paidOffAt = try tx.clientThrottlePaidOffAt(clientKey: key)
        try tx.setClientThrottle(clientKey: key, paidOffAt: policy.paidOffAt(afterFailureFrom: paidOffAt, now: now))
    }

    /// `retryAfter` in a read of its own (the admin routes, where no service transaction surrounds it).
    public func retryAfter(clientKey: String, now: Int64) throws(ServiceFailure) -> Int64? {
        do {
            return try store.read { tx in try retryAfter(clientKey: clientKey, in: tx, now: now) }
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }

    /// `recordFailure` in a write of its own.
    public func recordFailure(clientKey: String, now: Int64) throws(ServiceFailure) {
        do {
            try store.write { tx in try recordFailure(clientKey: clientKey, in: tx, now: now) }
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }

    /// Clients whose failures still weigh on them at `now`, across every server on the database, on
    /// either count (a client in debt on both counts twice).
    public func clientsInDebt(now: Int64) throws(ServiceFailure) -> Int {
        do {
            return try store.read { try $0.clientsInDebt(now: now * 1000) }
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }
}
