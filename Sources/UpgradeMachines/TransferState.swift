/// Where one Apple-linked account stands with respect to a team transfer (docs/architecture.md §6). Every state
/// keeps the Apple ids it knows, so the credential state of any of them can be answered.
public enum TransferState: Sendable, Hashable {
    /// Linked to `sub` of the team that currently owns the app.
    case linked(Linked)
    /// The sender team obtained the user's `transfer_sub` for the recipient team.
    case transferPrepared(Prepared)
    /// Re-keyed to the recipient team's `sub`.
    case transferred(Transferred)
    /// A step failed for this user; retrying means running the same step again.
    case transferFailed(Failed)
    /// The user revoked consent: not migratable.
    case revoked(Ended)
    /// The user deleted their Apple account: not migratable.
    case deleted(Ended)

    public struct Linked: Sendable, Hashable {
        public var sub: String

        public init(sub: String) {
            self.sub = sub
        }
    }

    public struct Prepared: Sendable, Hashable {
        /// Still the sender team's id: the account is reached by it until the exchange.
        public var sub: String
        public var transferSub: String

        public init(sub: String, transferSub: String) {
            self.sub = sub
            self.transferSub = transferSub
        }
    }

    public struct Transferred: Sendable, Hashable {
        /// The recipient team's id.
        public var sub: String
        /// The sender team's id, which now reads as `transferred`.
        public var previousSub: String
        /// Kept because tokens go on carrying it for the whole window; a repeated sign-in with it
        /// must be recognised as a replay.
        public var transferSub: String

        public init(sub: String, previousSub: String, transferSub: String) {
            self.sub = sub
            self.previousSub = previousSub
            self.transferSub = transferSub
        }
    }

    public struct Failed: Sendable, Hashable {
        /// The step to run again.
        public enum RetryStep: Sendable, Hashable {
            case prepare
            /// The exchange failed; the transfer identifier is kept for the retry.
            case complete(transferSub: String)
        }

        /// Still the sender team's id.
        public var sub: String
        public var retryStep: RetryStep
        /// The latest failure.
        public var reason: TransferFailureReason
        /// Failures of this step so far, for reports.
        public var failures: Int

        public init(sub: String, retryStep: RetryStep, reason: TransferFailureReason, failures: Int) {
            self.sub = sub
            self.retryStep = retryStep
            self.reason = reason
            self.failures = failures
        }

        /// The known `transfer_sub`, if the failed step was the exchange.
        public var transferSub: String? {
            guard case .complete(let transferSub) = retryStep else { return nil }
            return transferSub
        }
    }

    /// A revoked or deleted account: the ids it had, so that each reads as `revoked`.
    public struct Ended: Sendable, Hashable {
        public var sub: String
        /// The sender team's id when the account had been transferred.
        public var previousSub: String?

        public init(sub: String, previousSub: String?) {
            self.sub = sub
            self.previousSub = previousSub
        }
    }

    public var status: TransferStatus {
        switch self {
        case .linked: .linked
        case .transferPrepared: .transferPrepared
        case .transferred: .transferred
        case .transferFailed: .transferFailed
        case .revoked: .revoked
        case .deleted: .deleted
        }
    }

    /// The id the account is reached by now.
    public var sub: String {
        switch self {
        case .linked(let state): state.sub
        case .transferPrepared(let state): state.sub
        case .transferred(let state): state.sub
        case .transferFailed(let state): state.sub
        case .revoked(let state), .deleted(let state): state.sub
        }
    }

    /// The sender team's id after a transfer.
    public var previousSub: String? {
        switch self {
        case .transferred(let state): state.previousSub
        case .revoked(let state), .deleted(let state): state.previousSub
        case .linked, .transferPrepared, .transferFailed: nil
        }
    }

    /// The transfer identifier, once obtained.
    public var transferSub: String? {
        switch self {
        case .transferPrepared(let state): state.transferSub
        case .transferred(let state): state.transferSub
        case .transferFailed(let state): state.transferSub
        case .linked, .revoked, .deleted: nil
        }
    }
}
