/// The revocation queue. Writers are serialised (BEGIN IMMEDIATE), and a claim is one conditional
/// UPDATE, so a row is claimed by one sender at a time.
extension SQLiteTransaction: AppleRevocationStore {
    func insertAppleRevocation(_ revocation: AppleRevocationRecord) throws(StorageError) {
        try rows(
            "INSERT INTO apple_revocations (\(AppleRevocationRecord.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            revocation.insertArguments
        )
    }

    func appleRevocation(id: String) throws(StorageError) -> AppleRevocationRecord? {
        try rows("SELECT \(AppleRevocationRecord.columns) FROM apple_revocations WHERE id = ?", [.text(id)])
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
            UPDATE apple_revocations SET claim_token = ?, claimed_until = ?
            WHERE id IN (
                SELECT id FROM apple_revocations
                WHERE done_at IS NULL AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
                ORDER BY next_attempt_at, id LIMIT ?
            )
            RETURNING \(AppleRevocationRecord.columns)
            """,
            [.text(token), .integer(claimedUntil), .integer(now), .integer(now), .integer(Int64(max(0, limit)))]
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
            UPDATE apple_revocations SET claim_token = ?, claimed_until = ?
            WHERE id = ? AND done_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?)
            RETURNING \(AppleRevocationRecord.columns)
            """,
            [.text(token), .integer(claimedUntil), .text(id), .integer(now)]
        ).first.map(AppleRevocationRecord.init(row:))
    }

    func finishAppleRevocation(id: String, now: Int64, note: String?) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE apple_revocations SET done_at = ?, token_ciphertext = X'', attempts = attempts + 1,
                claim_token = NULL, claimed_until = NULL, last_error = ?
            WHERE id = ? AND done_at IS NULL
            """,
            [.integer(now), SQLValue(note), .text(id)]
        )
        return connection.changes == 1
    }

    func deferAppleRevocation(
        id: String,
        token: String,
        nextAttemptAt: Int64,
        error: String
    ) throws(StorageError) -> Bool {
        try rows(
            """
            UPDATE apple_revocations SET attempts = attempts + 1, next_attempt_at = ?, claim_token = NULL,
                claimed_until = NULL, last_error = ?
            WHERE id = ? AND claim_token = ? AND done_at IS NULL
            """,
            [.integer(nextAttemptAt), .text(error), .text(id), .text(token)]
        )
        return connection.changes == 1
    }

    func pendingAppleRevocationCount() throws(StorageError) -> Int {
        Int(try rows("SELECT COUNT(*) FROM apple_revocations WHERE done_at IS NULL").first?.first?.int ?? 0)
    }
}
