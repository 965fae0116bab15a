/// Why an upgrade call failed. The raw value is the reason's stored code (in the `machine` column
/// and audit rows): stable, never renamed. The REST layer maps reasons to its own problem slugs. A
/// `failed` state stores one of the reasons for which ``endsUpgrade`` is true; ``invalidCode`` and
/// ``upgradeExpired`` only ever describe an answer.
public enum UpgradeFailureReason: String, Sendable, Hashable, CaseIterable, Codable {
    /// Wrong password or unknown user; the two must look the same.
    case invalidCredentials = "invalid-credentials"
    /// An in-app upgrade's ticket is wrong, expired, already used or another account's.
    case invalidTicket = "invalid-ticket"
    /// The account (or the username, known or not) is locked by the lockout policy.
    case locked = "locked"
    /// The account cannot be upgraded (already Apple-only, disabled, or changed meanwhile).
    case notEligible = "not-eligible"
    /// A wrong TOTP or recovery code with attempts left; the upgrade stays in `stepUpRequired`.
    case invalidCode = "invalid-code"
    /// The last allowed step-up attempt was wrong.
    case tooManyAttempts = "too-many-attempts"
    case stateMismatch = "state-mismatch"
    case nonceMismatch = "nonce-mismatch"
    case invalidIdentityToken = "invalid-identity-token"
    /// The Apple `sub` is already linked to another account: a conflict, never a merge.
    case subConflict = "sub-conflict"
    /// Apple refused the authorization code (expired, used, issued to another client): answered
    /// `invalid-authorization-code`, the slug the report counts it under too. Until `appleUnavailable`
    /// existed it also stood for Apple not answering.
    case appleExchangeFailed = "apple-exchange-failed"
    /// Apple could not be reached for the code exchange, or failed (a 5xx, a timeout, an answer that is
    /// not Apple's): nothing was linked, answered `apple-unavailable`.
    case appleUnavailable = "apple-unavailable"
    /// The authorization code is not the identity token's: its `c_hash` differs, or the `id_token` Apple
    /// returned with the exchange names another user. Nothing was linked; the grant was revoked.
    case invalidAuthorizationCode = "invalid-authorization-code"
    /// The conversion's claim lapsed before it finished (the server stopped, or could not record the
    /// outcome). The account is unchanged; the client starts a new upgrade.
    case conversionInterrupted = "conversion-interrupted"
    /// The upgrade's deadline passed.
    case upgradeExpired = "upgrade-expired"
    /// The account's credentials changed (a password change completed, an import replaced the
    /// password or TOTP, a new second factor) while this upgrade was open, or before its conversion
    /// committed: what authorized it no longer holds. Nothing was linked; the client starts anew.
    case credentialsChanged = "credentials-changed"

    /// Whether a `failed` state can carry this reason.
    public var endsUpgrade: Bool {
        switch self {
        case .invalidCode, .upgradeExpired: false
        default: true
        }
    }
}
