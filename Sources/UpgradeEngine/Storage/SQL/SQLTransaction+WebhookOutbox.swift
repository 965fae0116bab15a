/// The webhook outbox. On SQLite writers are serialised (BEGIN IMMEDIATE), so an account's next
/// sequence number read here is still free at the insert, and a claim is one conditional UPDATE. On
/// PostgreSQL two SERIALIZABLE transactions that number one account's events, or claim one row,
/// conflict: the second is rolled back and run again, and finds the number taken or the row claimed.
extension SQLTransaction {
    func insertWebhookEvent(_ event: WebhookEventRecord) throws(StorageError) {
        try send(WebhookOutboxSQL.insertWebhookEvent[dialect], event.insertArguments)
    }

    func webhookEvent(id: String) throws(StorageError) -> WebhookEventRecord? {
        try rows("SELECT \(WebhookEventRecord.columns) FROM webhook_outbox WHERE id = $1", [.text(id)])
            .first.map(WebhookEventRecord.init(row:))
    }

    func claimDueWebhookEvents(
        now: Int64,
        token: String,
        claimedUntil: Int64,
        limit: Int
    ) throws(StorageError) -> [WebhookEventRecord] {
        WebhookEventRecord.ordered(
            try rows(
                WebhookOutboxSQL.claimDue,
                [.integer(now), .integer(Int64(max(0, limit))), .text(token), .integer(claimedUntil)]
            )
        )
    }

    func finishWebhookEvent(id: String, token: String, now: Int64) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE webhook_outbox SET delivered_at = $1, attempts = attempts + 1, claim_token = NULL,
                claimed_until = NULL, last_error = NULL
            WHERE id = $2 AND claim_token = $3 AND delivered_at IS NULL AND failed_at IS NULL
            """,
            [.integer(now), .text(id), .text(token)]
        )
        return changes == 1
    }

    func deferWebhookEvent(
        id: String,
        token: String,
        nextAttemptAt: Int64,
        failedAt: Int64?,
        error: String
    ) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE webhook_outbox SET attempts = attempts + 1, next_attempt_at = $1, failed_at = $2,
                claim_token = NULL, claimed_until = NULL, last_error = $3
            WHERE id = $4 AND claim_token = $5 AND delivered_at IS NULL AND failed_at IS NULL
            """,
            [.integer(nextAttemptAt), SQLValue(failedAt), .text(error), .text(id), .text(token)]
        )
        guard changes == 1 else { return false }
        if failedAt == nil {
            // The account's later events cannot go before this one: not due before it is, they stay
            // out of the claim's scan of due rows instead of being probed and passed over at every
            // claim while a receiver is down (Schema/webhooks.md, Guarantees).
            try rows(
                """
                UPDATE webhook_outbox SET next_attempt_at = $1
                WHERE account_id = (SELECT account_id FROM webhook_outbox WHERE id = $2)
                    AND account_seq > (SELECT account_seq FROM webhook_outbox WHERE id = $2)
                    AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at < $1
                """,
                [.integer(nextAttemptAt), .text(id)]
            )
        }
        return true
    }

    func replayWebhookEvents(since: Int64, now: Int64) throws(StorageError) -> Int {
        try rows(
            """
            UPDATE webhook_outbox SET delivered_at = NULL, failed_at = NULL, attempts = 0, next_attempt_at = $1,
                first_attempt_at = NULL, claim_token = NULL, claimed_until = NULL, last_error = NULL
            WHERE created_at >= $2
            """,
            [.integer(now), .integer(since)]
        )
        return changes
    }

    func webhookOutboxCounts() throws(StorageError) -> WebhookOutboxCounts {
        let row =
            try rows(
                """
                SELECT COUNT(*) FILTER (WHERE delivered_at IS NULL AND failed_at IS NULL),
                    COUNT(*) FILTER (WHERE delivered_at IS NOT NULL),
                    COUNT(*) FILTER (WHERE failed_at IS NOT NULL),
                    MIN(created_at) FILTER (WHERE delivered_at IS NULL AND failed_at IS NULL)
                FROM webhook_outbox
                """
            ).first ?? []
        return WebhookOutboxCounts(row: row)
    }

    func failedWebhookEvents(limit: Int) throws(StorageError) -> [WebhookEventRecord] {
        try rows(
            """
            SELECT \(WebhookEventRecord.columns) FROM webhook_outbox WHERE failed_at IS NOT NULL
            ORDER BY failed_at DESC, id DESC LIMIT $1
            """,
            [.integer(Int64(max(0, limit)))]
        ).map(WebhookEventRecord.init(row:))
    }

    func retryingWebhookEvents(limit: Int) throws(StorageError) -> [WebhookEventRecord] {
        try rows(
            """
            SELECT \(WebhookEventRecord.columns) FROM webhook_outbox
            WHERE delivered_at IS NULL AND failed_at IS NULL AND attempts > 0
            ORDER BY first_attempt_at, id LIMIT $1
            """,
            [.integer(Int64(max(0, limit)))]
        ).map(WebhookEventRecord.init(row:))
    }

    func webhookEventsNamingPersonalData(accountID: String) throws(StorageError) -> [WebhookEventRecord] {
        try rows(WebhookOutboxSQL.selectWebhooksNamingPersonalData, [.text(accountID)]).map(
            WebhookEventRecord.init(row:)
        )
    }

    func replaceWebhookPayload(id: String, payload: String) throws(StorageError) {
        try send("UPDATE webhook_outbox SET payload = $1 WHERE id = $2", [.text(payload), .text(id)])
    }
}

private enum WebhookOutboxSQL {
    static let insertWebhookEvent = DialectSQL {
        "INSERT INTO webhook_outbox (\(WebhookEventRecord.columns)) VALUES \(WebhookEventRecord.insertValues($0))"
    }
    static let claimDue = """
        UPDATE webhook_outbox SET claim_token = $3, claimed_until = $4,
            first_attempt_at = COALESCE(first_attempt_at, $1)
        WHERE id IN (\(WebhookEventRecord.dueSelection))
        RETURNING \(WebhookEventRecord.columns)
        """
    static let selectWebhooksNamingPersonalData = """
        SELECT \(WebhookEventRecord.columns) FROM webhook_outbox
        WHERE account_id = $1 AND \(PersonalData.mentionsKey(column: "payload", names: PersonalData.payloadKeys))
        ORDER BY account_seq
        """
}

extension WebhookOutboxCounts {
    init(row: [SQLValue]) {
        func value(_ index: Int) -> Int64? { index < row.count ? row[index].int : nil }
        self.init(
            pending: Int(value(0) ?? 0),
            delivered: Int(value(1) ?? 0),
            failed: Int(value(2) ?? 0),
            oldestPendingAt: value(3)
        )
    }
}
