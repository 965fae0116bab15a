/// The support console's sessions (`ConsoleSessionStore`).
extension SQLTransaction {
    func insertConsoleSession(_ session: ConsoleSessionRecord) throws(StorageError) {
        try send(
            "INSERT INTO console_sessions (session_hash, token_name, token_fingerprint, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
            [
                .text(session.hash), .text(session.tokenName), .text(session.tokenFingerprint),
                .integer(session.createdAt), .integer(session.expiresAt),
            ]
        )
    }

    func consoleSession(hash: String, now: Int64) throws(StorageError) -> ConsoleSessionRecord? {
        try rows(
            "SELECT session_hash, token_name, token_fingerprint, created_at, expires_at FROM console_sessions WHERE session_hash = $1 AND expires_at > $2",
            [.text(hash), .integer(now)]
        ).first.map {
            ConsoleSessionRecord(
                hash: $0[0].string ?? "",
                tokenName: $0[1].string ?? "",
                tokenFingerprint: $0[2].string ?? "",
                createdAt: $0[3].int ?? 0,
                expiresAt: $0[4].int ?? 0
            )
        }
    }

    func deleteConsoleSession(hash: String) throws(StorageError) -> Bool {
        try rows("DELETE FROM console_sessions WHERE session_hash = $1", [.text(hash)])
        return changes > 0
    }

    /// Through `console_sessions_expiry`, so its cost is the rows it deletes, not the table's.
    func deleteExpiredConsoleSessions(now: Int64, limit: Int) throws(StorageError) -> Int {
        try rows(
            """
            DELETE FROM console_sessions WHERE session_hash IN (
                SELECT session_hash FROM console_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)
            """,
            [.integer(now), .integer(Int64(limit))]
        )
        return changes
    }

    func liveConsoleSessionCount(now: Int64) throws(StorageError) -> Int {
        Int(try scalarInt("SELECT count(*) FROM console_sessions WHERE expires_at > $1", [.integer(now)]) ?? 0)
    }
}
