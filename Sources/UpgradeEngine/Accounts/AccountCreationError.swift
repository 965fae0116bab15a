/// Why `AccountCreationService` created no account. Nothing was written.
public enum AccountCreationError: Error, Sendable, Equatable {
    case emptyPassword
    /// Longer than `AccountCreationService.Request.maximumPasswordBytes` UTF-8 bytes.
    case passwordTooLong
    /// More than `AccountCreationService.Request.maximumRecoveryCodes`, or fewer than none.
    case recoveryCodeCount
    /// An account has this username (in its enforced form).
    case usernameTaken
    /// The username looks like `other`'s: the same confusable skeleton (UTS #39, docs/usernames.md).
    /// `other` is nil when a concurrent creation of the look-alike committed first.
    case lookAlike(other: AccountRecord?)
}
