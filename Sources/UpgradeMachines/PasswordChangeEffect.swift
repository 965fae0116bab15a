/// Work the driver performs for a password-change transition.
public enum PasswordChangeEffect: Sendable, Hashable {
    /// In the transaction that persists `completed`: replace the account's password hash with the
    /// argon2id hash of the new password computed when the change started, and write the
    /// `password.changed` audit row. The old password stops working when it commits.
    case storeNewPassword
}
