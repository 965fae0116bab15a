/// Something that happened to one Apple-linked account's team transfer. `begin…` events ask the
/// machine whether a step may run now (it owns the 60-day window rule) and return the call to
/// make; the other events report outcomes. No event carries a secret.
public enum TransferEvent: Sendable, Hashable {
    /// The sender team's batch wants a transfer identifier for this user. `windowEndsAt` is when
    /// the migration window closes (``TransferStateMachine/windowLength`` after the transfer was
    /// accepted), or `nil` while the transfer has not been accepted: preparing may happen before.
    case beginPreparation(windowEndsAt: Int64?)
    /// Apple answered the sender team's request with this user's `transfer_sub`.
    case transferIdentifierObtained(transferSub: String)
    /// The recipient team's batch wants to exchange this user's `transfer_sub`. Exchanging only
    /// exists once the transfer was accepted, so the window end is required.
    case beginCompletion(windowEndsAt: Int64)
    /// Apple exchanged the `transfer_sub` for the recipient team's `sub` (and relay email).
    case newSubObtained(sub: String, email: String?)
    /// The user signed in with an identity token carrying both the recipient team's `sub` and
    /// `transfer_sub` (docs/apple-protocol.md §3.5).
    case signedInWithTransferSub(transferSub: String, sub: String, email: String?)
    /// Apple answered the current step with a 4xx for this user.
    case stepFailed(reason: TransferFailureReason)
    /// The team that received the app through this account's transfer is preparing to move it on
    /// (to a third team, or back): the finished transfer is to be retired so that a new one can
    /// begin from the account's current id (docs/apple-protocol.md §3.2, "A later transfer").
    /// `windowEndsAt` is the earlier transfer's window end as recorded, if it was; `migratedAt` is
    /// when the account was migrated, which came after that transfer was accepted.
    case beginNextTransfer(windowEndsAt: Int64?, migratedAt: Int64)
    /// Apple's `consent-revoked` notification.
    case consentRevoked
    /// Apple's `account-delete` / `account-deleted` notification.
    case accountDeleted

    /// Stable name for errors and the audit trail.
    public var name: String {
        switch self {
        case .beginPreparation: "beginPreparation"
        case .transferIdentifierObtained: "transferIdentifierObtained"
        case .beginCompletion: "beginCompletion"
        case .newSubObtained: "newSubObtained"
        case .signedInWithTransferSub: "signedInWithTransferSub"
        case .stepFailed: "stepFailed"
        case .beginNextTransfer: "beginNextTransfer"
        case .consentRevoked: "consentRevoked"
        case .accountDeleted: "accountDeleted"
        }
    }
}
