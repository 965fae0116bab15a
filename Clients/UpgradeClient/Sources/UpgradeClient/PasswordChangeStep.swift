/// What the server answered to a strong-password change that did not fail.
public enum PasswordChangeStep: Sendable, Equatable {
    /// The new password is stored; the old one no longer works. Call
    /// `completeChangePasswordRequest(updatedCredential:userInfo:)` with the new password.
    case completed(id: String)
    /// The account has a second factor. From a call without UI, cancel the request with
    /// `userInteractionRequired` (the interactive call presents the same password or ticket again and
    /// supersedes this change); from the UI, ask for a code and call
    /// ``UpgradeServing/stepUpPasswordChange(id:code:)`` or
    /// ``UpgradeServing/stepUpPasswordChange(id:recoveryCode:)``.
    case twoFactorAuthRequired(id: String, attemptsRemaining: Int?)

    /// The password change this step belongs to.
    public var id: String {
        switch self {
        case .completed(let id), .twoFactorAuthRequired(let id, _): id
        }
    }
}
