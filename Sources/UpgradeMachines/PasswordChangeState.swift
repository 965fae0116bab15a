/// Where one password change stands. Open states carry their deadline (Unix seconds: the first
/// second at which the state has expired).
public enum PasswordChangeState: Sendable, Hashable {
    /// Created by `POST /v1/password-changes`; the current password or ticket is being evaluated.
    case started(Started)
    /// The current password (or ticket) was right and the account has TOTP enrolled.
    case stepUpRequired(StepUpRequired)
    /// The new password replaced the old one.
    case completed
    case failed(Failed)
    /// The extension cancelled the request: the `ASExtensionError` code it cancelled with.
    case cancelled(Cancelled)
    case expired

    public struct Started: Sendable, Hashable {
        /// Also caps the step-up's deadline.
        public var deadline: Int64

        public init(deadline: Int64) {
            self.deadline = deadline
        }
    }

    public struct StepUpRequired: Sendable, Hashable {
        public var deadline: Int64
        /// Wrong codes so far; the limit is ``UpgradePolicy/maxStepUpAttempts``.
        public var failedAttempts: Int

        public init(deadline: Int64, failedAttempts: Int) {
            self.deadline = deadline
            self.failedAttempts = failedAttempts
        }
    }

    public struct Failed: Sendable, Hashable {
        /// Always one whose ``PasswordChangeFailureReason/endsChange`` is true.
        public var reason: PasswordChangeFailureReason

        public init(reason: PasswordChangeFailureReason) {
            self.reason = reason
        }
    }

    public struct Cancelled: Sendable, Hashable {
        public var reason: ASExtensionErrorCode

        public init(reason: ASExtensionErrorCode) {
            self.reason = reason
        }
    }

    public var status: PasswordChangeStatus {
        switch self {
        case .started: .started
        case .stepUpRequired: .stepUpRequired
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
        case .completed, .failed, .cancelled, .expired: nil
        }
    }

    /// What an answer from this state tells the extension; `nil` for `started`, which is passed
    /// through inside one request.
    public var result: UpgradeResult? {
        switch self {
        case .started: nil
        case .stepUpRequired: .twoFactorAuthRequired
        case .completed: .success
        case .failed, .cancelled, .expired: .failure
        }
    }

    public var problem: PasswordChangeFailureReason? {
        switch self {
        case .failed(let state): state.reason
        case .expired: .expired
        default: nil
        }
    }
}

extension PasswordChangeState {
    /// The flat form stored in the `machine` column: a status plus the fields that status has.
    public struct Persisted: Sendable, Hashable, Codable {
        public var status: String
        public var deadline: Int64?
        /// `stepUpRequired` only.
        public var failedAttempts: Int?
        /// `failed` only: a ``PasswordChangeFailureReason`` stored code.
        public var failureReason: String?
        /// `cancelled` only: the ``ASExtensionErrorCode`` number.
        public var cancelCode: Int?

        public init(
            status: String,
            deadline: Int64? = nil,
            failedAttempts: Int? = nil,
            failureReason: String? = nil,
            cancelCode: Int? = nil
        ) {
            self.status = status
            self.deadline = deadline
            self.failedAttempts = failedAttempts
            self.failureReason = failureReason
            self.cancelCode = cancelCode
        }
    }

    public var persisted: Persisted {
        switch self {
        case .started(let state):
            Persisted(status: status.rawValue, deadline: state.deadline)
        case .stepUpRequired(let state):
            Persisted(status: status.rawValue, deadline: state.deadline, failedAttempts: state.failedAttempts)
        case .completed, .expired:
            Persisted(status: status.rawValue)
        case .failed(let state):
            Persisted(status: status.rawValue, failureReason: state.reason.rawValue)
        case .cancelled(let state):
            Persisted(status: status.rawValue, cancelCode: state.reason.rawValue)
        }
    }

    /// Restores a stored state, refusing any record that is not exactly what ``persisted`` writes.
    public init(persisted record: Persisted) throws(PersistedStateError) {
        var fields = PersistedFields(machine: "passwordChange", status: record.status)
        guard let status = PasswordChangeStatus(rawValue: record.status) else {
            throw fields.error("unknown status")
        }
        switch status {
        case .started:
            self = .started(.init(deadline: try fields.require(record.deadline, "deadline")))
        case .stepUpRequired:
            let deadline = try fields.require(record.deadline, "deadline")
            let failedAttempts = try fields.require(record.failedAttempts, "failedAttempts")
            guard failedAttempts >= 0 else { throw fields.error("failedAttempts is negative (\(failedAttempts))") }
            self = .stepUpRequired(.init(deadline: deadline, failedAttempts: failedAttempts))
        case .completed:
            self = .completed
        case .failed:
            let code = try fields.require(record.failureReason, "failureReason")
            guard let reason = PasswordChangeFailureReason(rawValue: code), reason.endsChange else {
                throw fields.error("'\(code)' is not a reason a password change can fail with")
            }
            self = .failed(.init(reason: reason))
        case .cancelled:
            let number = try fields.require(record.cancelCode, "cancelCode")
            guard let code = ASExtensionErrorCode(rawValue: number) else {
                throw fields.error("\(number) is not an ASExtensionError code")
            }
            self = .cancelled(.init(reason: code))
        case .expired:
            self = .expired
        }
        try fields.rejectUnused([
            "deadline": record.deadline != nil,
            "failedAttempts": record.failedAttempts != nil,
            "failureReason": record.failureReason != nil,
            "cancelCode": record.cancelCode != nil,
        ])
    }
}
