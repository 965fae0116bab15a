extension UpgradeState {
    /// The flat form the driver stores: a `status` column plus the few fields that status has.
    /// Fields a status does not have are `nil`. Codable for stores that prefer one JSON column.
    public struct Persisted: Sendable, Hashable, Codable {
        /// ``UpgradeStatus`` raw value.
        public var status: String
        public var deadline: Int64?
        /// `stepUpRequired` only.
        public var sessionDeadline: Int64?
        /// `stepUpRequired` only.
        public var failedAttempts: Int?
        /// `converting` and `completed`.
        public var sub: String?
        /// `failed` only: an ``UpgradeFailureReason`` stored code.
        public var failureReason: String?
        /// `cancelled` only: an ``ASExtensionErrorCode`` raw value.
        public var cancelCode: Int?

        public init(
            status: String,
            deadline: Int64? = nil,
            sessionDeadline: Int64? = nil,
            failedAttempts: Int? = nil,
            sub: String? = nil,
            failureReason: String? = nil,
            cancelCode: Int? = nil
        ) {
            self.status = status
            self.deadline = deadline
            self.sessionDeadline = sessionDeadline
            self.failedAttempts = failedAttempts
            self.sub = sub
            self.failureReason = failureReason
            self.cancelCode = cancelCode
        }
    }

    public var persisted: Persisted {
        switch self {
        case .started(let state):
            Persisted(status: status.rawValue, deadline: state.deadline)
        case .stepUpRequired(let state):
            Persisted(
                status: status.rawValue,
                deadline: state.deadline,
                sessionDeadline: state.sessionDeadline,
                failedAttempts: state.failedAttempts
            )
        case .awaitingAppleCredential(let state):
            Persisted(status: status.rawValue, deadline: state.deadline)
        case .converting(let state):
            Persisted(status: status.rawValue, deadline: state.deadline, sub: state.sub)
        case .completed(let state):
            Persisted(status: status.rawValue, sub: state.sub)
        case .failed(let state):
            Persisted(status: status.rawValue, failureReason: state.reason.rawValue)
        case .cancelled(let state):
            Persisted(status: status.rawValue, cancelCode: state.reason.rawValue)
        case .expired:
            Persisted(status: status.rawValue)
        }
    }

    /// Restores a stored state, refusing any record that is not exactly what ``persisted`` writes
    /// for some state.
    public init(persisted record: Persisted) throws(PersistedStateError) {
        var fields = PersistedFields(machine: "upgrade", status: record.status)
        guard let status = UpgradeStatus(rawValue: record.status) else {
            throw fields.error("unknown status")
        }
        switch status {
        case .started:
            self = .started(.init(deadline: try fields.require(record.deadline, "deadline")))
        case .stepUpRequired:
            let deadline = try fields.require(record.deadline, "deadline")
            let sessionDeadline = try fields.require(record.sessionDeadline, "sessionDeadline")
            let failedAttempts = try fields.require(record.failedAttempts, "failedAttempts")
            guard failedAttempts >= 0 else { throw fields.error("failedAttempts is negative (\(failedAttempts))") }
            guard deadline <= sessionDeadline else {
                throw fields.error("deadline \(deadline) is after sessionDeadline \(sessionDeadline)")
            }
            self = .stepUpRequired(
                .init(deadline: deadline, sessionDeadline: sessionDeadline, failedAttempts: failedAttempts)
            )
        case .awaitingAppleCredential:
            self = .awaitingAppleCredential(.init(deadline: try fields.require(record.deadline, "deadline")))
        case .converting:
            let deadline = try fields.require(record.deadline, "deadline")
            self = .converting(.init(sub: try fields.requireIdentifier(record.sub, "sub"), deadline: deadline))
        case .completed:
            self = .completed(.init(sub: try fields.requireIdentifier(record.sub, "sub")))
        case .failed:
            let code = try fields.require(record.failureReason, "failureReason")
            guard let reason = UpgradeFailureReason(rawValue: code), reason.endsUpgrade else {
                throw fields.error("'\(code)' is not a reason an upgrade can fail with")
            }
            self = .failed(.init(reason: reason))
        case .cancelled:
            let raw = try fields.require(record.cancelCode, "cancelCode")
            guard let code = ASExtensionErrorCode(rawValue: raw) else {
                throw fields.error("\(raw) is not an ASExtensionError code")
            }
            self = .cancelled(.init(reason: code))
        case .expired:
            self = .expired
        }
        try fields.rejectUnused([
            "deadline": record.deadline != nil,
            "sessionDeadline": record.sessionDeadline != nil,
            "failedAttempts": record.failedAttempts != nil,
            "sub": record.sub != nil,
            "failureReason": record.failureReason != nil,
            "cancelCode": record.cancelCode != nil,
        ])
    }
}
