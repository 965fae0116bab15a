/// Why a password-change call failed. The raw value is the stored code (in the `machine` column and
/// audit rows): stable, never renamed. A `failed` state stores one for which ``endsChange`` is true;
/// the others only ever describe an answer.
public enum PasswordChangeFailureReason: String, Sendable, Hashable, CaseIterable, Codable {
    /// Wrong current password or unknown user; the two look the same.
    case invalidCredentials = "invalid-credentials"
    /// The ticket is wrong, expired, already used or another account's.
    case invalidTicket = "invalid-ticket"
    case locked = "locked"
    /// The account has no password to change (Apple-only), or it changed while the step-up was open.
    case notEligible = "not-eligible"
    /// The last allowed step-up code was wrong.
    case tooManyAttempts = "too-many-attempts"
    /// A wrong code with attempts left; the change stays in `stepUpRequired`.
    case invalidCode = "invalid-code"
    /// The new password breaks a rule; the state stays as it was.
    case passwordPolicy = "password-policy"
    /// The change's deadline passed.
    case expired = "expired"
    /// The account's credentials changed after this change was opened: it ended, nothing stored.
    case credentialsChanged = "credentials-changed"
    /// A newer change of the account was accepted (or its ticket presented again): this one ended.
    case superseded = "superseded"

    /// Whether a `failed` state can carry this reason.
    public var endsChange: Bool {
        switch self {
        case .invalidCode, .passwordPolicy, .expired: false
        default: true
        }
    }
}
