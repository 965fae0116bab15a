/// Apple's server-to-server notifications already processed, and sign-in nonces already used.
/// Both are single-statement conditional inserts. On PostgreSQL, of two transactions inserting one
/// key, one inserts and the other waits for it, then (SERIALIZABLE) is rolled back and run again,
/// and finds the key taken.
extension SQLTransaction {
    func recordNotification(jti: String, type: String, now: Int64) throws(StorageError) -> Bool {
        try rows(
            "INSERT INTO apple_notifications (jti, type, received_at) VALUES ($1, $2, $3) ON CONFLICT (jti) DO NOTHING",
            [.text(jti), .text(type), .integer(now)]
        )
        return changes == 1
    }

    func notificationSeen(jti: String) throws(StorageError) -> Bool {
        try scalarInt("SELECT count(*) FROM apple_notifications WHERE jti = $1", [.text(jti)]) == 1
    }

    // MARK: Sign-in nonces

    func useSignInNonce(hash: String, expiresAt: Int64, now: Int64) throws(StorageError) -> Bool {
        // Expired rows are refused by their expiry anyway; the index keeps this a range delete.
        try rows("DELETE FROM used_sign_in_nonces WHERE expires_at <= $1", [.integer(now)])
        try rows(
            "INSERT INTO used_sign_in_nonces (nonce_hash, expires_at) VALUES ($1, $2) ON CONFLICT (nonce_hash) DO NOTHING",
            [.text(hash), .integer(expiresAt)]
        )
        return changes == 1
    }
}
