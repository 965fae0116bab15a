/// What Apple sends that must count once, inside a transaction: a server-to-server notification
/// (by its `jti`) and the nonce of a sign-in token (by its hash).
public protocol NotificationStore {
    /// Records a processed notification; returns false if its `jti` was already recorded.
    func recordNotification(jti: String, type: String, now: Int64) throws(StorageError) -> Bool
    func notificationSeen(jti: String) throws(StorageError) -> Bool

    /// Records a sign-in nonce as used until `expiresAt`, first forgetting those expired by `now`;
    /// returns false if it was already used.
    func useSignInNonce(hash: String, expiresAt: Int64, now: Int64) throws(StorageError) -> Bool
}
