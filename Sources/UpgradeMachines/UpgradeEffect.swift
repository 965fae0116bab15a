/// Work the driver performs for a transition. The machine decides *that* it happens; the driver
/// does it, because it needs randomness, keys, the network or the database.
public enum UpgradeEffect: Sendable, Hashable {
    /// Generate a random `state` and `nonce`, store their hashes in the same transaction as the new
    /// `awaitingAppleCredential` state, and return both strings in the answer. The machine only
    /// records that they were issued: being in `awaitingAppleCredential` implies it.
    case issueStateAndNonce
    /// After persisting `converting`, exchange the authorization code from the credential request
    /// with Apple, then apply `authorizationCodeExchanged` or `conversionFailed(.appleExchangeFailed)`.
    /// Persisting `converting` first is what makes two racing credential requests unable to both
    /// reach Apple with one code.
    case exchangeAuthorizationCode
    /// In the same transaction that persists `completed`: link `sub` to the account (unique),
    /// delete the password hash, set the credential kind to `appleOnly`, store the refresh token
    /// encrypted. If the transaction fails, the record is still `converting`; apply
    /// `conversionFailed` with the reason (a unique-constraint hit is `.subConflict`).
    case convertAccount(sub: String)
}
