/// The webhook outbox (`webhook_outbox`), inside a transaction. A row is inserted by the
/// transaction that makes the change it tells of, and a sender delivers it later; a sender takes
/// rows by claiming them, so two senders never hold one row at once (Schema/webhooks.md).
public protocol WebhookOutboxStore {
    /// Inserts `event` as given, except `accountSequence`: the store numbers an account's events
    /// 1, 2, ... in commit order (nil for an event without an account), in the INSERT itself, so the
    /// write returns nothing and may travel with the next statement.
    func insertWebhookEvent(_ event: WebhookEventRecord) throws(StorageError)
    func webhookEvent(id: String) throws(StorageError) -> WebhookEventRecord?
    /// Claims up to `limit` rows that are pending (neither delivered nor failed), due by `now` and
    /// not claimed (or whose claim lapsed by `now`), and whose account has no earlier pending event,
    /// oldest due first, in one conditional write: sets their claim to `token` until `claimedUntil`,
    /// stamps `firstAttemptAt` if unset, and returns them so. Of two concurrent callers, each row goes
    /// to one at most; an account has at most one claimed row.
    func claimDueWebhookEvents(
        now: Int64,
        token: String,
        claimedUntil: Int64,
        limit: Int
    ) throws(StorageError) -> [WebhookEventRecord]
    /// Marks the row delivered at `now` (counting the attempt) and ends the claim, if `token` still
    /// holds it; false otherwise (changes nothing).
    func finishWebhookEvent(id: String, token: String, now: Int64) throws(StorageError) -> Bool
    /// Counts a failed attempt and ends the claim, if `token` still holds the row: schedules the next
    /// attempt at `nextAttemptAt` (and its account's later pending events no sooner), or, with
    /// `failedAt`, gives the row up as failed. False otherwise.
    func deferWebhookEvent(
        id: String,
        token: String,
        nextAttemptAt: Int64,
        failedAt: Int64?,
        error: String
    ) throws(StorageError) -> Bool
    /// Makes every event created at or after `since` pending again, due at `now`, with its attempts
    /// and retry window reset and any claim ended; its id and payload stay. Returns how many.
    func replayWebhookEvents(since: Int64, now: Int64) throws(StorageError) -> Int
    /// Counts by state, and the creation time of the oldest pending event.
    func webhookOutboxCounts() throws(StorageError) -> WebhookOutboxCounts
    /// Failed events, most recently failed first, at most `limit`.
    func failedWebhookEvents(limit: Int) throws(StorageError) -> [WebhookEventRecord]
    /// Pending events that were tried and not delivered yet (with their last error and next
    /// attempt), the longest retried first, at most `limit`.
    func retryingWebhookEvents(limit: Int) throws(StorageError) -> [WebhookEventRecord]
    /// The events of `accountID` in whose payload one of `PersonalData.payloadKeys` appears, in sequence
    /// order: what deleting the account has to redact.
    func webhookEventsNamingPersonalData(accountID: String) throws(StorageError) -> [WebhookEventRecord]
    /// Stores `payload` as event `id`'s, leaving its id, state and everything else as they are: only
    /// a deletion's redaction changes a payload (docs/architecture.md §7.1).
    func replaceWebhookPayload(id: String, payload: String) throws(StorageError)
}

extension WebhookOutboxStore {
    /// Makes `null`, in every earlier event of the account being deleted, the members of `data` that
    /// name a person (`PersonalData.redactPayload`), whether the event is pending, delivered or
    /// failed: one still pending is sent so, and a replay sends them so. Returns how many changed.
    @discardableResult
    public func redactWebhookEvents(accountID: String) throws(StorageError) -> Int {
        var changed = 0
        for event in try webhookEventsNamingPersonalData(accountID: accountID) {
            guard let payload = PersonalData.redactPayload(event.payload) else { continue }
            try replaceWebhookPayload(id: event.id, payload: payload)
            changed += 1
        }
        return changed
    }
}

/// How the outbox stands.
public struct WebhookOutboxCounts: Sendable, Equatable {
    public var pending: Int
    public var delivered: Int
    public var failed: Int
    /// `created_at` of the oldest pending event; nil when none is pending.
    public var oldestPendingAt: Int64?

    public init(pending: Int, delivered: Int, failed: Int, oldestPendingAt: Int64?) {
        self.pending = pending
        self.delivered = delivered
        self.failed = failed
        self.oldestPendingAt = oldestPendingAt
    }
}

/// A row of `webhook_outbox`: the event as it is sent, and its sending state. Nothing secret.
public struct WebhookEventRecord: Sendable, Equatable {
    /// The `webhook-id` (`msg_` + random), the same on every attempt and replay.
    public var id: String
    public var accountID: String?
    public var accountSequence: Int64?
    public var type: String
    /// The JSON body, exactly as signed and sent.
    public var payload: String
    public var createdAt: Int64
    public var attempts: Int64
    public var nextAttemptAt: Int64
    public var firstAttemptAt: Int64?
    public var claimToken: String?
    public var claimedUntil: Int64?
    public var deliveredAt: Int64?
    public var failedAt: Int64?
    /// A short reason from the last failed attempt (an HTTP status, a timeout).
    public var lastError: String?

    public init(
        id: String,
        accountID: String?,
        accountSequence: Int64? = nil,
        type: String,
        payload: String,
        createdAt: Int64,
        attempts: Int64 = 0,
        nextAttemptAt: Int64,
        firstAttemptAt: Int64? = nil,
        claimToken: String? = nil,
        claimedUntil: Int64? = nil,
        deliveredAt: Int64? = nil,
        failedAt: Int64? = nil,
        lastError: String? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.accountSequence = accountSequence
        self.type = type
        self.payload = payload
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.firstAttemptAt = firstAttemptAt
        self.claimToken = claimToken
        self.claimedUntil = claimedUntil
        self.deliveredAt = deliveredAt
        self.failedAt = failedAt
        self.lastError = lastError
    }

    static let columns =
        "id, account_id, account_seq, type, payload, created_at, attempts, next_attempt_at, first_attempt_at, claim_token, claimed_until, delivered_at, failed_at, last_error"

    init(row: [SQLValue]) {
        self.init(
            id: row[0].string ?? "",
            accountID: row[1].string,
            accountSequence: row[2].int,
            type: row[3].string ?? "",
            payload: row[4].string ?? "",
            createdAt: row[5].int ?? 0,
            attempts: row[6].int ?? 0,
            nextAttemptAt: row[7].int ?? 0,
            firstAttemptAt: row[8].int,
            claimToken: row[9].string,
            claimedUntil: row[10].int,
            deliveredAt: row[11].int,
            failedAt: row[12].int,
            lastError: row[13].string
        )
    }

    /// The INSERT's values; the sequence is computed from the account's rows (parameter 2, the
    /// account id, typed since `IS NULL` gives PostgreSQL nothing to infer its type from). The next
    /// attempt (parameter 7) is no sooner than that of the account's pending events: an event behind
    /// a deferred one is not due before it (`deferWebhookEvent`), so it stays out of the claim's scan.
    static func insertValues(_ dialect: SQLDialect) -> String {
        func p(_ number: Int) -> String { number == 2 ? dialect.parameter(2, as: "text") : "$\(number)" }
        let sequence =
            "CASE WHEN \(p(2)) IS NULL THEN NULL ELSE (SELECT COALESCE(MAX(account_seq), 0) + 1 FROM webhook_outbox WHERE account_id = \(p(2))) END"
        let nextAttempt =
            "COALESCE((SELECT MAX(next_attempt_at) FROM webhook_outbox WHERE account_id = \(p(2)) "
            + "AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at > $7), $7)"
        let values = [p(1), p(2), sequence] + (3...6).map(p) + [nextAttempt] + (8...13).map(p)
        return "(" + values.joined(separator: ", ") + ")"
    }

    var insertArguments: [SQLValue] {
        [
            .text(id), SQLValue(accountID), .text(type), .text(payload), .integer(createdAt),
            .integer(attempts), .integer(nextAttemptAt), SQLValue(firstAttemptAt), SQLValue(claimToken),
            SQLValue(claimedUntil), SQLValue(deliveredAt), SQLValue(failedAt), SQLValue(lastError),
        ]
    }

    static func ordered(_ rows: [[SQLValue]]) -> [WebhookEventRecord] {
        rows.map(WebhookEventRecord.init(row:)).sorted {
            ($0.nextAttemptAt, $0.createdAt, $0.id) < ($1.nextAttemptAt, $1.createdAt, $1.id)
        }
    }

    /// The claim's selection: pending, due, unclaimed, and first of its account among pending
    /// events. Parameter 1 is now, 2 the limit.
    static let dueSelection =
        """
        SELECT o.id FROM webhook_outbox o
        WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND o.next_attempt_at <= $1
            AND (o.claimed_until IS NULL OR o.claimed_until <= $1)
            AND (o.account_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM webhook_outbox e
                WHERE e.account_id = o.account_id AND e.account_seq < o.account_seq
                    AND e.delivered_at IS NULL AND e.failed_at IS NULL))
        ORDER BY o.next_attempt_at, o.created_at, o.id LIMIT $2
        """
}
