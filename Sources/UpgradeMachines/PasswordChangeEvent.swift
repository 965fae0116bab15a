/// Something that happened to a password change. As with ``UpgradeEvent``, the driver does the
/// cryptography and reports outcomes; no event carries a secret.
public enum PasswordChangeEvent: Sendable, Hashable {
    /// The current password was checked.
    case passwordEvaluated(UpgradeEvent.PasswordOutcome)
    /// A one-time ticket (minted by `POST /v1/upgrade-tickets`) stood in for the current password and
    /// was spent. `secondFactor`: the account has TOTP and the ticket did not say it was verified.
    case ticketAccepted(secondFactor: Bool)
    case ticketRejected(reason: UpgradeEvent.TicketRejection)
    /// A TOTP or recovery code was checked.
    case stepUpEvaluated(UpgradeEvent.StepUpOutcome)
    /// The new password breaks a rule (or equals the current one): the state stays as it was, so a
    /// corrected try may follow.
    case newPasswordRefused
    /// The account's password or kind changed since this change started (another change completed,
    /// or the account was upgraded to Apple): the change cannot complete.
    case accountChanged
    /// The account's credentials changed while this change was open (another change completed, an
    /// import replaced the password or TOTP, a new second factor): applied by the transaction that
    /// changes them, so a change opened with the old password cannot complete afterwards.
    case credentialsChanged
    /// A newer change of the same account was accepted, or the same ticket was presented again for a
    /// new change (an in-app change's interactive call after its silent one): an account has at most
    /// one open password change.
    case superseded
    /// The extension cancelled the request (`POST /v1/password-changes/{id}/cancel`): its
    /// `cancelRequest()` cleanup, or the silent call asking for the UI (`userInteractionRequired`).
    case cancel(reason: ASExtensionErrorCode)
    /// A sweeper found the state's deadline behind it; any other late event expires it as well.
    case deadlinePassed

    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case passwordEvaluated, ticketAccepted, ticketRejected, stepUpEvaluated, newPasswordRefused, accountChanged
        case credentialsChanged, superseded, cancel, deadlinePassed
    }

    public var kind: Kind {
        switch self {
        case .passwordEvaluated: .passwordEvaluated
        case .ticketAccepted: .ticketAccepted
        case .ticketRejected: .ticketRejected
        case .stepUpEvaluated: .stepUpEvaluated
        case .newPasswordRefused: .newPasswordRefused
        case .accountChanged: .accountChanged
        case .credentialsChanged: .credentialsChanged
        case .superseded: .superseded
        case .cancel: .cancel
        case .deadlinePassed: .deadlinePassed
        }
    }

    /// Stable name for errors and the audit trail.
    public var name: String { kind.rawValue }
}
