import Foundation

/// Sends the revocation queue (`apple_revocations`) to Apple's `/auth/revoke` with
/// `token_type_hint=refresh_token` (docs/architecture.md §7.1). A row is claimed first (one
/// conditional UPDATE), so several senders on one database never send one row at once; then:
///
/// - **200**: done, never sent again; the sealed token is emptied.
/// - **400 `invalid_grant`**: Apple says the token is expired, revoked or not this client's: it can
///   no longer be used, which is what revoking wants, so the row is done with that reason. (Apple
///   documents 200 for a token that is already invalid; this covers the answer it gives instead.)
/// - **429, 5xx, a transport failure, any other 4xx** (our client secret refused, say): counted and
///   tried again after an exponential backoff with jitter (`Policy`), capped, forever. A row is never
///   dropped.
///
/// Time comes in as `now`, so tests move it instead of sleeping. No token reaches an event, an error
/// or the database's `last_error`.
public final class AppleRevocationSender: Sendable {
    public struct Policy: Sendable, Equatable {
        /// The wait after the first failed attempt, doubled after each further one (then jittered).
        public var initialBackoff: Int64 = 1
        public var maximumBackoff: Int64 = 3600
        /// How long a claim holds a row: longer than one call to Apple can take, short enough that a
        /// sender that died lets another take its rows soon.
        public var claimSeconds: Int64 = 120
        /// Rows claimed per pass.
        public var batchSize = 20

        public init() {}

        /// The wait before the attempt after `failedAttempts` failures (at least 1): the exponential
        /// step, less up to half of it at random, so rows that failed together spread out.
        public func backoff(failedAttempts: Int64, random: (ClosedRange<Int64>) -> Int64 = Int64.random(in:)) -> Int64 {
            RetryBackoff(initial: initialBackoff, maximum: maximumBackoff)
                .delay(failedAttempts: failedAttempts, random: random)
        }
    }

    /// How a revocation stands after an attempt.
    public enum Outcome: String, Sendable, Equatable {
        /// Apple answered 200 (or said the token is already invalid): done.
        case done
        /// Queued: Apple was unavailable, or no Apple client is configured; the queue will send it.
        case pending
    }

    /// What a sender did, for logs and metrics; never carries a token.
    public enum Event: Sendable, Equatable {
        /// Apple answered 200 for the row (`note` nil), or said the token was already invalid.
        case revoked(id: String, attempts: Int64, note: String?)
        /// The attempt failed; the row is tried again at `nextAttemptAt`.
        case deferred(id: String, attempts: Int64, reason: String, nextAttemptAt: Int64)
    }

    let store: any UpgradeStore
    let secrets: SecretBox
    let apple: (any AppleTokenRevoking)?
    public let policy: Policy
    let onEvent: @Sendable (Event) -> Void

    /// `apple` nil (no Apple configuration): nothing is claimed or sent, every revocation stays pending.
    public init(
        store: any UpgradeStore,
        secrets: SecretBox,
        apple: (any AppleTokenRevoking)?,
        policy: Policy = Policy(),
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.store = store
        self.secrets = secrets
        self.apple = apple
        self.policy = policy
        self.onEvent = onEvent
    }

    /// One attempt at revocation `id` now, due or not (a deletion's first attempt, the CLI's own
    /// retries). `done` if it is done (now or before), `pending` otherwise, also when another sender
    /// holds it at the moment.
    public func attempt(id: String, now: Int64) async throws(StorageError) -> Outcome {
        try await attempt(id: id, clock: { now })
    }

    /// `attempt(id:now:)` with the time read from `clock` when it starts and again when Apple has
    /// answered, so that a retry is due a backoff after the attempt ended. With `claim` (the first
    /// attempt at a row its deletion inserted under it, `claimForNewRow`) the row is already held;
    /// otherwise it is claimed first.
    public func attempt(
        id: String,
        holding claim: AppleRevocationClaim? = nil,
        clock: @escaping @Sendable () -> Int64
    ) async throws(StorageError) -> Outcome {
        guard let apple else { return try isDone(id) ? .done : .pending }
        let now = clock()
        let token = claim?.token ?? Self.newClaimToken()
        let held = try store.writeStorageErrors { tx throws(StorageError) -> AppleRevocationRecord? in
            guard claim != nil else {
                return try tx.claimAppleRevocation(
                    id: id,
                    now: now,
                    token: token,
                    claimedUntil: now + policy.claimSeconds
                )
            }
            return try tx.appleRevocation(id: id).flatMap { $0.doneAt == nil && $0.claimToken == token ? $0 : nil }
        }
        guard let held else { return try isDone(id) ? .done : .pending }
        return try await send(held, token: token, apple: apple, started: now, clock: clock)
    }

    /// A claim for a deletion to write with its revocation row, so that the request's first attempt
    /// is its own: the queue's worker cannot take the row between the deletion's commit and that
    /// attempt. If the request dies, the claim runs out after `claimSeconds` and the worker sends it.
    /// Nil when this sender cannot reach Apple.
    public func claimForNewRow(now: Int64) -> AppleRevocationClaim? {
        apple == nil ? nil : AppleRevocationClaim(token: Self.newClaimToken(), until: now + policy.claimSeconds)
    }

    /// One pass over the queue: claims the rows due by `clock()` (at most `policy.batchSize`) and
    /// sends each once, one after another; a failed one is due again a backoff after `clock()` reads
    /// when its own exchange ended (Apple's timeout may have run out, and the rows before it took
    /// their time too). Returns how many are done now and how many were deferred.
    @discardableResult
    public func sendDue(clock: @escaping @Sendable () -> Int64) async throws(StorageError) -> (done: Int, deferred: Int)
    {
        guard let apple else { return (0, 0) }
        let now = clock()
        let token = Self.newClaimToken()
        let claimed = try store.writeStorageErrors {
            try $0.claimDueAppleRevocations(
                now: now,
                token: token,
                claimedUntil: now + policy.claimSeconds,
                limit: policy.batchSize
            )
        }
        var result = (done: 0, deferred: 0)
        for row in claimed {
            if try await send(row, token: token, apple: apple, started: now, clock: clock) == .done {
                result.done += 1
            } else {
                result.deferred += 1
            }
        }
        return result
    }

    private func send(
        _ row: AppleRevocationRecord,
        token: String,
        apple: any AppleTokenRevoking,
        started: Int64,
        clock: @Sendable () -> Int64
    ) async throws(StorageError) -> Outcome {
        var now = started
        let refreshToken: String
        do {
            let opened = try secrets.open(
                row.tokenCiphertext,
                context: UpgradeService.refreshTokenContext(accountID: row.accountID)
            )
            refreshToken = String(decoding: opened, as: UTF8.self)
        } catch {
            // Another key than the one that sealed it: kept, in case the right key comes back.
            return try deferRow(row, token: token, now: now, reason: "the sealed token cannot be opened with this key")
        }
        do throws(AppleEndpointError) {
            defer { now = max(started, clock()) }
            try await apple.revokeRefreshToken(refreshToken, clientID: row.clientID)
        } catch {
            guard error.code == .invalidGrant else {
                return try deferRow(row, token: token, now: now, reason: Self.reason(error))
            }
            return try finish(row, now: now, note: "invalid_grant: Apple says the token is already invalid")
        }
        return try finish(row, now: now, note: nil)
    }

    private func finish(_ row: AppleRevocationRecord, now: Int64, note: String?) throws(StorageError) -> Outcome {
        if try store.writeStorageErrors({ try $0.finishAppleRevocation(id: row.id, now: now, note: note) }) {
            onEvent(.revoked(id: row.id, attempts: row.attempts + 1, note: note))
        }
        return .done
    }

    private func deferRow(
        _ row: AppleRevocationRecord,
        token: String,
        now: Int64,
        reason: String
    ) throws(StorageError) -> Outcome {
        let attempts = row.attempts + 1
        let next = now + policy.backoff(failedAttempts: attempts)
        if try store.writeStorageErrors({
            try $0.deferAppleRevocation(id: row.id, token: token, nextAttemptAt: next, error: reason)
        }) {
            onEvent(.deferred(id: row.id, attempts: attempts, reason: reason, nextAttemptAt: next))
        }
        return try isDone(row.id) ? .done : .pending
    }

    private func isDone(_ id: String) throws(StorageError) -> Bool {
        try store.readStorageErrors { try $0.appleRevocation(id: id)?.doneAt != nil }
    }

    /// A short reason for `last_error`: Apple's code, the HTTP status, and the client's message
    /// (which names endpoints and statuses, never a token), cut short.
    static func reason(_ error: AppleEndpointError) -> String {
        var text = error.code.rawValue
        if let status = error.httpStatus { text += " (HTTP \(status))" }
        text += ": " + error.message
        return String(text.unicodeScalars.prefix(200).map(Character.init))
    }

    static func newClaimToken() -> String { SecureRandom.token(byteCount: 12) }
}

/// A claim on a revocation row written with the row itself (`claimForNewRow`).
public struct AppleRevocationClaim: Sendable, Equatable {
    public let token: String
    public let until: Int64
}
