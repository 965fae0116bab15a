/// The Apple link check. A claim is one conditional UPDATE, as for the revocation queue: on SQLite
/// writers are serialised; on PostgreSQL, of two SERIALIZABLE transactions claiming one link, the
/// second is rolled back and run again, and finds the link no longer due. Every statement names the
/// partial indexes' condition, so the planner can use them.
extension SQLTransaction {
    func unscheduledAppleLinkChecks(limit: Int) throws(StorageError) -> [String] {
        try rows(
            """
            SELECT account_id FROM apple_links
            WHERE \(AppleLinkCheckSQL.takesPart) AND check_due_at IS NULL
            ORDER BY account_id LIMIT $1
            """,
            [.integer(Int64(max(0, limit)))]
        ).compactMap { $0[0].string }
    }

    func scheduleAppleLinkCheck(accountID: String, dueAt: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE apple_links SET check_due_at = $1 WHERE account_id = $2 AND check_due_at IS NULL",
            [.integer(dueAt), .text(accountID)]
        )
        return changes == 1
    }

    func claimDueAppleLinkChecks(
        now: Int64,
        token: String,
        claimedUntil: Int64,
        limit: Int
    ) throws(StorageError) -> [AppleLinkCheck] {
        try rows(
            """
            UPDATE apple_links SET check_claim_token = $1, check_due_at = $2
            WHERE account_id IN (
                SELECT account_id FROM apple_links
                WHERE \(AppleLinkCheckSQL.takesPart) AND check_due_at IS NOT NULL AND check_due_at <= $3
                ORDER BY check_due_at, account_id LIMIT $4
            )
            RETURNING \(AppleLinkCheck.columns)
            """,
            [.text(token), .integer(claimedUntil), .integer(now), .integer(Int64(max(0, limit)))]
        ).map(AppleLinkCheck.init(row:)).sorted { $0.accountID < $1.accountID }
    }

    func finishAppleLinkCheck(
        accountID: String,
        token: String,
        checkedAt: Int64,
        nextDueAt: Int64
    ) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE apple_links SET checked_at = $1, check_due_at = $2, check_failures = 0, check_error = NULL,
                check_claim_token = NULL
            WHERE account_id = $3 AND check_claim_token = $4
            """,
            [.integer(checkedAt), .integer(nextDueAt), .text(accountID), .text(token)]
        )
        return changes == 1
    }

    func deferAppleLinkCheck(
        accountID: String,
        token: String,
        nextDueAt: Int64,
        error: String
    ) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE apple_links SET check_due_at = $1, check_failures = check_failures + 1, check_error = $2,
                check_claim_token = NULL
            WHERE account_id = $3 AND check_claim_token = $4
            """,
            [.integer(nextDueAt), .text(error), .text(accountID), .text(token)]
        )
        return changes == 1
    }

    func releaseAppleLinkCheck(accountID: String, token: String, dueAt: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE apple_links SET check_due_at = $1, check_claim_token = NULL WHERE account_id = $2 AND check_claim_token = $3",
            [.integer(dueAt), .text(accountID), .text(token)]
        )
        return changes == 1
    }

    func oldestDueAppleLinkCheck(now: Int64) throws(StorageError) -> Int64? {
        try scalarInt(
            """
            SELECT MIN(check_due_at) FROM apple_links
            WHERE \(AppleLinkCheckSQL.takesPart) AND check_due_at IS NOT NULL AND check_due_at <= $1
            """,
            [.integer(now)]
        )
    }

    func appleLinkCheck(accountID: String) throws(StorageError) -> AppleLinkCheck? {
        try rows("SELECT \(AppleLinkCheck.columns) FROM apple_links WHERE account_id = $1", [.text(accountID)])
            .first.map(AppleLinkCheck.init(row:))
    }
}

enum AppleLinkCheckSQL {
    /// The links that take part: the partial indexes' condition, word for word.
    static let takesPart = "status = 'linked' AND refresh_token_ciphertext IS NOT NULL"
}
