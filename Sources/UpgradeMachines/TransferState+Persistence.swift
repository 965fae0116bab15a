extension TransferState {
    /// The flat form the driver stores: a `status` column plus the fields that status has.
    /// Fields a status does not have are `nil`. Codable for stores that prefer one JSON column.
    public struct Persisted: Sendable, Hashable, Codable {
        /// ``TransferStatus`` raw value.
        public var status: String
        /// Every status.
        public var sub: String
        /// `transferred`, and `revoked`/`deleted` after a transfer.
        public var previousSub: String?
        /// `transferPrepared`, `transferred`, and `transferFailed` when the exchange failed.
        public var transferSub: String?
        /// `transferFailed` only: `prepare` or `complete`.
        public var retryStep: String?
        /// `transferFailed` only: a ``TransferFailureReason`` stored code.
        public var failureReason: String?
        /// `transferFailed` only.
        public var failures: Int?

        public init(
            status: String,
            sub: String,
            previousSub: String? = nil,
            transferSub: String? = nil,
            retryStep: String? = nil,
            failureReason: String? = nil,
            failures: Int? = nil
        ) {
            self.status = status
            self.sub = sub
            self.previousSub = previousSub
            self.transferSub = transferSub
            self.retryStep = retryStep
            self.failureReason = failureReason
            self.failures = failures
        }
    }

    public var persisted: Persisted {
        switch self {
        case .linked(let state):
            Persisted(status: status.rawValue, sub: state.sub)
        case .transferPrepared(let state):
            Persisted(status: status.rawValue, sub: state.sub, transferSub: state.transferSub)
        case .transferred(let state):
            Persisted(
                status: status.rawValue,
                sub: state.sub,
                previousSub: state.previousSub,
                transferSub: state.transferSub
            )
        case .transferFailed(let state):
            Persisted(
                status: status.rawValue,
                sub: state.sub,
                transferSub: state.transferSub,
                retryStep: state.transferSub == nil ? "prepare" : "complete",
                failureReason: state.reason.rawValue,
                failures: state.failures
            )
        case .revoked(let state), .deleted(let state):
            Persisted(status: status.rawValue, sub: state.sub, previousSub: state.previousSub)
        }
    }

    /// Restores a stored state, refusing any record that is not exactly what ``persisted`` writes
    /// for some state.
    public init(persisted record: Persisted) throws(PersistedStateError) {
        var fields = PersistedFields(machine: "transfer", status: record.status)
        guard let status = TransferStatus(rawValue: record.status) else {
            throw fields.error("unknown status")
        }
        let sub = try fields.requireIdentifier(record.sub, "sub")
        switch status {
        case .linked:
            self = .linked(.init(sub: sub))
        case .transferPrepared:
            self = .transferPrepared(
                .init(sub: sub, transferSub: try fields.requireIdentifier(record.transferSub, "transferSub"))
            )
        case .transferred:
            self = .transferred(
                .init(
                    sub: sub,
                    previousSub: try fields.requireIdentifier(record.previousSub, "previousSub"),
                    transferSub: try fields.requireIdentifier(record.transferSub, "transferSub")
                )
            )
        case .transferFailed:
            let step = try fields.require(record.retryStep, "retryStep")
            let retryStep: Failed.RetryStep
            switch step {
            case "prepare": retryStep = .prepare
            case "complete":
                retryStep = .complete(transferSub: try fields.requireIdentifier(record.transferSub, "transferSub"))
            default: throw fields.error("'\(step)' is not a transfer step (prepare or complete)")
            }
            let code = try fields.require(record.failureReason, "failureReason")
            guard let reason = TransferFailureReason(rawValue: code) else {
                throw fields.error("'\(code)' is not a transfer failure reason")
            }
            let failures = try fields.require(record.failures, "failures")
            guard failures >= 1 else {
                throw fields.error("failures is \(failures); a failed step has failed at least once")
            }
            self = .transferFailed(.init(sub: sub, retryStep: retryStep, reason: reason, failures: failures))
        case .revoked, .deleted:
            let previousSub = fields.optional(record.previousSub, "previousSub")
            if previousSub?.isEmpty == true { throw fields.error("previousSub is empty") }
            let ended = Ended(sub: sub, previousSub: previousSub)
            self = status == .revoked ? .revoked(ended) : .deleted(ended)
        }
        try fields.rejectUnused([
            "previousSub": record.previousSub != nil,
            "transferSub": record.transferSub != nil,
            "retryStep": record.retryStep != nil,
            "failureReason": record.failureReason != nil,
            "failures": record.failures != nil,
        ])
    }
}
