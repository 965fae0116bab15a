/// Where one upgrade session stands. Each open state carries its deadline (Unix seconds: the first
/// second at which the state has expired); terminal states carry what their answer needs.
public enum UpgradeState: Sendable, Hashable {
    /// Created by `POST /v1/upgrades`; the password has not been evaluated yet.
    case started(Started)
    /// The password was right and the account has TOTP enrolled.
    case stepUpRequired(StepUpRequired)
    /// The account is authenticated; `state` and `nonce` were issued for Apple's sheet.
    case awaitingAppleCredential(AwaitingAppleCredential)
    /// Apple's credential was verified; the code exchange and the conversion are under way.
    case converting(Converting)
    /// The account is Apple-only and linked to `sub`.
    case completed(Completed)
    case failed(Failed)
    case cancelled(Cancelled)
    case expired

    public struct Started: Sendable, Hashable {
        /// Also the session deadline, which caps every later user-facing state.
        public var deadline: Int64

        public init(deadline: Int64) {
            self.deadline = deadline
        }
    }

    public struct StepUpRequired: Sendable, Hashable {
        public var deadline: Int64
        public var sessionDeadline: Int64
        /// Wrong codes so far; the limit is ``UpgradePolicy/maxStepUpAttempts``. Storing the count
        /// rather than what is left means a changed policy applies to sessions in flight.
        public var failedAttempts: Int

        public init(deadline: Int64, sessionDeadline: Int64, failedAttempts: Int) {
            self.deadline = deadline
            self.sessionDeadline = sessionDeadline
            self.failedAttempts = failedAttempts
        }
    }

    public struct AwaitingAppleCredential: Sendable, Hashable {
        /// Also when the issued `state` and `nonce` stop being accepted.
        public var deadline: Int64

        public init(deadline: Int64) {
            self.deadline = deadline
        }
    }

    public struct Converting: Sendable, Hashable {
        public var sub: String
        /// Not capped by the session deadline: the user finished in time, what remains is server
        /// work. It only bounds how long a record stuck here (a crash mid-exchange) stays open.
        public var deadline: Int64

        public init(sub: String, deadline: Int64) {
            self.sub = sub
            self.deadline = deadline
        }
    }

    public struct Completed: Sendable, Hashable {
        /// Kept so that a retried credential call can be recognised and answered idempotently.
        public var sub: String

        public init(sub: String) {
            self.sub = sub
        }
    }

    public struct Failed: Sendable, Hashable {
        /// Always one whose ``UpgradeFailureReason/endsUpgrade`` is true.
        public var reason: UpgradeFailureReason

        public init(reason: UpgradeFailureReason) {
            self.reason = reason
        }
    }

    public struct Cancelled: Sendable, Hashable {
        public var reason: ASExtensionErrorCode

        public init(reason: ASExtensionErrorCode) {
            self.reason = reason
        }
    }

    public var status: UpgradeStatus {
        switch self {
        case .started: .started
        case .stepUpRequired: .stepUpRequired
        case .awaitingAppleCredential: .awaitingAppleCredential
        case .converting: .converting
        case .completed: .completed
        case .failed: .failed
        case .cancelled: .cancelled
        case .expired: .expired
        }
    }

    /// The deadline of an open state; `nil` once terminal.
    public var deadline: Int64? {
        switch self {
        case .started(let state): state.deadline
        case .stepUpRequired(let state): state.deadline
        case .awaitingAppleCredential(let state): state.deadline
        case .converting(let state): state.deadline
        case .completed, .failed, .cancelled, .expired: nil
        }
    }

    /// What an answer from this state tells the extension (docs/architecture.md §4.1). `nil` for `started` and
    /// `converting`: they are passed through inside one request and are never the state a client
    /// call ends in, so there is no outcome to report yet.
    public var result: UpgradeResult? {
        switch self {
        case .started, .converting: nil
        case .stepUpRequired: .twoFactorAuthRequired
        case .awaitingAppleCredential, .completed: .success
        case .failed, .cancelled, .expired: .failure
        }
    }

    /// The problem an answer from this state reports: the failure reason of `failed`, and
    /// `upgrade-expired` for `expired`. A cancellation is what the client asked for, not a problem.
    public var problem: UpgradeFailureReason? {
        switch self {
        case .failed(let state): state.reason
        case .expired: .upgradeExpired
        default: nil
        }
    }
}
