import Foundation

/// Delivers the webhook outbox to the app's backend, following the Standard Webhooks
/// specification (Schema/webhooks.md). Rows are claimed first (one conditional UPDATE), so several
/// senders on one database never send one row at once, and an account's events go one at a time,
/// in order. Then, for each row, one POST of its stored body with `webhook-id` (the row's id),
/// `webhook-timestamp` (this attempt's real time, Unix seconds) and `webhook-signature`:
///
/// - **2xx**: delivered, never sent again (unless replayed), whatever the answer's body (one over
///   `answerLimit` is not read, but its status still counts).
/// - **anything else, a timeout, no connection**: counted and tried again after an exponential
///   backoff with jitter (`Policy`), or the receiver's `Retry-After` if longer (up to the backoff's
///   longest wait), counted from when the attempt ended: an attempt that waited out its 15 s
///   timeout must not be due again at once. The first failed attempt ending at or after
///   `retryWindow` since the first attempt gives the row up as failed. A failed row no longer holds back its account's
///   later events; `upgrade-cli webhooks replay` sends it again.
///
/// At least once: a process killed between the receiver's 2xx and the commit that records it sends
/// the event again, with the same `webhook-id`, once its claim lapses. Time comes from a `clock` the
/// caller passes, read when a batch starts and again when each exchange ends, so tests move it
/// instead of sleeping.
public final class WebhookSender: Sendable {
    /// Where and how events are sent.
    public struct Endpoint: Sendable {
        public var url: String
        /// Newest first; every delivery is signed with each (`WebhookSecrets`).
        public var secrets: WebhookSecrets
        /// The whole exchange, connection included; past it the attempt counts as failed.
        public var timeout: Duration

        public init(url: String, secrets: WebhookSecrets, timeout: Duration = .seconds(15)) {
            self.url = url
            self.secrets = secrets
            self.timeout = timeout
        }

        public init(url: String, secret: WebhookSecret, timeout: Duration = .seconds(15)) {
            self.init(url: url, secrets: WebhookSecrets(secret), timeout: timeout)
        }
    }

    public struct Policy: Sendable, Equatable {
        /// 5 s after the first failure, doubling, at most an hour apart, jittered.
        public var backoff = RetryBackoff(initial: 5, maximum: 3600)
        /// How long a row is retried, from its first attempt.
        public var retryWindow: Int64 = 86_400
        /// How long a claim holds a row: longer than one attempt (`Endpoint.timeout`) can take, short
        /// enough that a sender that died lets another take its rows soon.
        public var claimSeconds: Int64 = 30
        /// Rows claimed per batch.
        public var batchSize = 50

        public init() {}
    }

    /// What the sender did, for logs and metrics; carries no payload.
    public enum Event: Sendable, Equatable {
        case delivered(id: String, type: String, attempts: Int64)
        case deferred(id: String, attempts: Int64, reason: String, nextAttemptAt: Int64)
        case failed(id: String, attempts: Int64, reason: String)
    }

    let store: any UpgradeStore
    /// Its secrets may be replaced by a reload (`replaceSecrets`); each batch reads it once.
    private let endpointHolder: Reloadable<Endpoint>?
    public let policy: Policy
    let onEvent: @Sendable (Event) -> Void
    /// Unix seconds for `webhook-timestamp`: the real time of the attempt, whatever `now` says,
    /// since receivers refuse a timestamp far from their own clock.
    let wallClock: @Sendable () -> Int64
    let transport = AppleClientTransport(connectTimeout: .seconds(5))

    /// `endpoint` nil (webhooks not configured): nothing is claimed or sent; events stay pending.
    public init(
        store: any UpgradeStore,
        endpoint: Endpoint?,
        policy: Policy = Policy(),
        wallClock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.store = store
        self.endpointHolder = endpoint.map { Reloadable($0) }
        self.policy = policy
        self.wallClock = wallClock
        self.onEvent = onEvent
    }

    /// Where events go now; nil when webhooks are off.
    public var endpoint: Endpoint? { endpointHolder?.current }

    /// Signs from the next batch on with `secrets` (a reload of `UPGRADE_WEBHOOK_SECRET_FILE`); a
    /// batch under way keeps the secrets it started with. Nothing happens when webhooks are off.
    public func replaceSecrets(_ secrets: WebhookSecrets) {
        guard let endpointHolder else { return }
        var endpoint = endpointHolder.current
        endpoint.secrets = secrets
        endpointHolder.replace(with: endpoint)
    }

    /// One batch: claims the rows due by `clock()` (at most `policy.batchSize`, one per account)
    /// and sends each once; a failed one is due again a backoff after `clock()` reads when its
    /// exchange ended. Returns how many were claimed, delivered and deferred or failed.
    @discardableResult
    public func sendDue(
        clock: @escaping @Sendable () -> Int64
    ) async throws(StorageError) -> (claimed: Int, delivered: Int, undelivered: Int) {
        guard let endpoint else { return (0, 0, 0) }
        let now = clock()
        let token = SecureRandom.token(byteCount: 12)
        let claimed = try store.writeStorageErrors {
            try $0.claimDueWebhookEvents(
                now: now,
                token: token,
                claimedUntil: now + policy.claimSeconds,
                limit: policy.batchSize
            )
        }
        // The batch holds one event per account, so its events go out at once: a batch takes about
        // as long as its slowest exchange, well inside the claim. Off the calling thread's executor,
        // so each exchange gets a thread of its own rather than running one after another.
        let outcomes = await withTaskGroup(of: Result<Bool, StorageError>.self) { group in
            for row in claimed {
                group.addTask(executorPreference: globalConcurrentExecutor) {
                    do throws(StorageError) {
                        return .success(
                            try await self.send(row, token: token, endpoint: endpoint, started: now, clock: clock)
                        )
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var outcomes: [Result<Bool, StorageError>] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        var result = (claimed: claimed.count, delivered: 0, undelivered: 0)
        for outcome in outcomes {
            if try outcome.get() { result.delivered += 1 } else { result.undelivered += 1 }
        }
        return result
    }

    /// Batches until one claims less than a full batch, or `maxBatches`: the worker's pass, so a
    /// backlog drains without waiting for the next tick.
    public func drain(clock: @escaping @Sendable () -> Int64, maxBatches: Int = 20) async throws(StorageError) {
        for _ in 0..<maxBatches where try await sendDue(clock: clock).claimed >= policy.batchSize {}
    }

    /// Counts by state, for `/metrics` and the CLI.
    public func counts() throws(StorageError) -> WebhookOutboxCounts {
        try store.readStorageErrors { try $0.webhookOutboxCounts() }
    }

    /// How much of a receiver's answer is read; only its status matters.
    static let answerLimit = 64 * 1024

    /// The body sent for `row`: its stored payload with the account's `sequence` added as the last
    /// member (1, 2, ... in commit order; none for an event without an account). The stored payload
    /// is what the change committed; the number is the store's, given at the insert. A receiver
    /// orders an account's events by it and sees a gap where an event was given up.
    static func body(_ row: WebhookEventRecord) -> String {
        guard let sequence = row.accountSequence, row.payload.hasSuffix("}") else { return row.payload }
        return row.payload.dropLast() + ",\"sequence\":\(sequence)}"
    }

    /// A receiver's `Retry-After` in seconds (the delta-seconds form; an HTTP date is not read).
    static func retryAfter(_ value: String?) -> Int64? {
        guard let value, !value.isEmpty, value.utf8.count <= 10, value.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return Int64(value)
    }

    /// The headers of one delivery of `row` at `timestamp`, as `Name: value` lines.
    static func headers(id: String, timestamp: Int64, body: [UInt8], secrets: WebhookSecrets) -> [String] {
        [
            "Content-Type: application/json",
            "webhook-id: \(id)",
            "webhook-timestamp: \(timestamp)",
            "webhook-signature: \(secrets.signature(id: id, timestamp: timestamp, body: body))",
        ]
    }

    private func send(
        _ row: WebhookEventRecord,
        token: String,
        endpoint: Endpoint,
        started: Int64,
        clock: @Sendable () -> Int64
    ) async throws(StorageError) -> Bool {
        let body = Array(Self.body(row).utf8)
        let request = AppleClientTransport.Request(
            method: "POST",
            url: endpoint.url,
            headers: Self.headers(id: row.id, timestamp: wallClock(), body: body, secrets: endpoint.secrets),
            body: body
        )
        let reason: String
        var retryAfter: Int64?
        let outcome = await transport.send(request, limit: Self.answerLimit, timeout: endpoint.timeout)
        // The exchange may have taken up to `endpoint.timeout`: what follows dates from its end.
        let now = max(started, clock())
        // The answer's status, when one came: an answer too long to keep still had one, and a 2xx
        // then said the event was stored.
        let status: Int? =
            switch outcome {
            case .success(let response): response.status
            case .failure(.tooLarge(_, let status)): status
            case .failure: nil
            }
        if let status, (200...299).contains(status) {
            if try store.writeStorageErrors({ try $0.finishWebhookEvent(id: row.id, token: token, now: now) }) {
                onEvent(.delivered(id: row.id, type: row.type, attempts: row.attempts + 1))
            }
            return true
        }
        switch outcome {
        case .success(let response):
            reason = "HTTP \(response.status)"
            retryAfter = Self.retryAfter(response.headers["retry-after"])
        case .failure(.tooLarge(_, let status?)):
            reason = "HTTP \(status), its answer over \(Self.answerLimit) bytes"
        case .failure(let failure):
            reason = String(failure.description.prefix(200))
        }
        let attempts = row.attempts + 1
        let firstAttempt = row.firstAttemptAt ?? now
        if now - firstAttempt >= policy.retryWindow {
            if try store.writeStorageErrors({
                try $0.deferWebhookEvent(id: row.id, token: token, nextAttemptAt: now, failedAt: now, error: reason)
            }) {
                onEvent(.failed(id: row.id, attempts: attempts, reason: reason))
            }
        } else {
            // A receiver's Retry-After (429, 503) is honoured, up to the backoff's longest wait.
            let wait = max(policy.backoff.delay(failedAttempts: attempts), min(retryAfter ?? 0, policy.backoff.maximum))
            let next = now + wait
            if try store.writeStorageErrors({
                try $0.deferWebhookEvent(id: row.id, token: token, nextAttemptAt: next, failedAt: nil, error: reason)
            }) {
                onEvent(.deferred(id: row.id, attempts: attempts, reason: reason, nextAttemptAt: next))
            }
        }
        return false
    }
}
