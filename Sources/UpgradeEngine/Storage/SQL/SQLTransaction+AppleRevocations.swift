/// The revocation queue. A claim is one conditional UPDATE: on SQLite writers are serialised (BEGIN
/// IMMEDIATE); on PostgreSQL, of two SERIALIZABLE transactions claiming one row, the second is
/// rolled back and run again, and finds the row claimed.
extension SQLTransaction {
    func insertAppleRevocation(_ revocation: AppleRevocationRecord) throws(StorageError) {
        try send(
            "INSERT INTO apple_revocations (\(AppleRevocationRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            revocation.insertArguments
        )
    }

    func appleRevocation(id: String) throws(StorageError) -> AppleRevocationRecord? {
        try rows("SELECT \(AppleRevocationRecord.columns) FROM apple_revocations WHERE id = $1", [.text(id)])
            .first.map(AppleRevocationRecord.init(row:))
    }

    func claimDueAppleRevocations(
        now: Int64,
        token: String,
        claimedUntil: Int64,
        limit: Int
    ) throws(StorageError) -> [AppleRevocationRecord] {
        try rows(
            """
            UPDATE apple_revocations SET claim_token = $1, claimed_until = $2
            WHERE id IN (
                SELECT id FROM apple_revocations
                WHERE done_at IS NULL AND next_attempt_at <= $3 AND (claimed_until IS NULL OR claimed_until <= $3)
                ORDER BY next_attempt_at, id LIMIT $4
            )
            RETURNING \(AppleRevocationRecord.columns)
            """,
            [.text(token), .integer(claimedUntil), .integer(now), .integer(Int64(max(0, limit)))]
        ).map(AppleRevocationRecord.init(row:)).sorted { ($0.nextAttemptAt, $0.id) < ($1.nextAttemptAt, $1.id) }
    }

    func claimAppleRevocation(
        id: String,
        now: Int64,
        token: String,
        claimedUntil: Int64
    ) throws(StorageError) -> AppleRevocationRecord? {
        try rows(
            """
            UPDATE apple_revocations SET claim_token = $1, claimed_until = $2
            WHERE id = $3 AND done_at IS NULL AND (claimed_until IS NULL OR claimed_until <= $4)
            RETURNING \(AppleRevocationRecord.columns)
            """,
            [.text(token), .integer(claimedUntil), .text(id), .integer(now)]
        ).first.map(AppleRevocationRecord.init(row:))
    }

    func finishAppleRevocation(id: String, now: Int64, note: String?) throws(StorageError) -> Bool {
        try rows(
            AppleRevocationSQL.finish,
            [.integer(now), SQLValue(note), .text(id)]
        )
        return changes == 1
    }

    func deferAppleRevocation(
        id: String,
        token: String,
        nextAttemptAt: Int64,
        error: String
    ) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE apple_revocations SET attempts = attempts + 1, next_attempt_at = $1, claim_token = NULL,
                claimed_until = NULL, last_error = $2
            WHERE id = $3 AND claim_token = $4 AND done_at IS NULL
            """,
            [.integer(nextAttemptAt), .text(error), .text(id), .text(token)]
        )
        return changes == 1
    }

    func pendingAppleRevocationCount() throws(StorageError) -> Int {
        Int(try scalarInt("SELECT COUNT(*) FROM apple_revocations WHERE done_at IS NULL") ?? 0)
    }

    func pendingAppleRevocations(limit: Int) throws(StorageError) -> [AppleRevocationRecord] {
        // `apple_revocations_due` holds exactly these rows, in this order.
        try rows(
            "SELECT \(AppleRevocationRecord.columns) FROM apple_revocations WHERE done_at IS NULL ORDER BY next_attempt_at, id LIMIT $1",
            [.integer(Int64(max(0, limit)))]
        ).map(AppleRevocationRecord.init(row:))
    }
}

private enum AppleRevocationSQL {
    static let finish = DialectSQL {
        """
        UPDATE apple_revocations SET done_at = $1, token_ciphertext = \($0.emptyBytes), attempts = attempts + 1,
            claim_token = NULL, claimed_until = NULL, last_error = $2
        WHERE id = $3 AND done_at IS NULL
        """
    }
}
