/// What a batch did (or, in a dry run, would do) to one account: the per-row record of a `--report`
/// file.
///
/// It holds the account id, transfer statuses, an outcome and a reason code, and nothing else: no
/// Apple `sub` (the sender team must never export its ids, docs/apple-protocol.md §3.1), no `transfer_sub`, no email
/// address, no token. Apple ids stay in the database, where `accounts show` can reach them.
public struct TransferRowReport: Sendable, Equatable {
    public enum Step: String, Sendable, Equatable, CaseIterable {
        /// Sender team: obtain the `transfer_sub`.
        case prepare
        /// Recipient team: exchange it for the new `sub`.
        case complete
    }

    public enum Outcome: String, Sendable, Equatable, CaseIterable {
        /// The step ran and its result is recorded.
        case succeeded
        /// Nothing to do: the step's result was already recorded (a re-run or a sign-in got there).
        case alreadyDone = "already-done"
        /// Not this step's business: the account is in another team, past this step's failure,
        /// or can no longer be migrated (revoked, deleted). `reason` says which.
        case skipped
        /// `complete` found no transfer identifier for an account that still needs one: run
        /// `prepare` with the sender team's credentials while the window is open.
        case notPrepared = "not-prepared"
        /// Apple refused the step for this user (4xx), or the window closed; recorded as
        /// `transferFailed` and retryable.
        case failed
        /// Refused to preserve an identity link (another account has the new id, a different target
        /// team or transfer identifier). Nothing merged; explained in the audit trail when Apple
        /// answered.
        case conflict
        /// Apple could not be reached (429, 5xx, transport) after the allowed retries. Nothing was
        /// recorded; a re-run tries again.
        case unavailable
        /// Our side failed (the store, an unreadable record). Nothing was recorded.
        case error
        /// Not attempted: the batch stopped first (a configuration error or an interruption).
        case stopped
        /// Dry run: the step would call Apple for this row.
        case wouldRun = "would-run"
        /// Dry run: the step would fail without calling Apple (the window is closed).
        case wouldFail = "would-fail"

        /// Rows that leave work or a decision for the operator.
        public var isFailure: Bool {
            switch self {
            case .succeeded, .alreadyDone, .skipped, .wouldRun: false
            case .notPrepared, .failed, .conflict, .unavailable, .error, .stopped, .wouldFail: true
            }
        }
    }

    public var accountID: String
    public var step: Step
    /// The status before this row was processed (`linked` for an account never touched).
    public var from: TransferStatus
    /// The status afterwards; in a dry run, the predicted one.
    public var to: TransferStatus
    public var outcome: Outcome
    /// A stable reason: a ``TransferFailureReason`` raw value, or one of the skip and conflict reasons
    /// documented where they are produced.
    public var reason: String?
    /// For a row skipped as `earlier-window-open`: when the earlier transfer's window closes, after
    /// which a rerun prepares it (Unix seconds).
    public var retryAfter: Int64?
    /// For a row refused as `ids-held`: the account whose live transfer record holds the Apple ids
    /// this row's record needs (the same Apple user linked to both accounts).
    public var heldBy: String?
    public var dryRun: Bool

    public init(
        accountID: String,
        step: Step,
        from: TransferStatus,
        to: TransferStatus,
        outcome: Outcome,
        reason: String? = nil,
        retryAfter: Int64? = nil,
        dryRun: Bool = false
    ) {
        self.accountID = accountID
        self.step = step
        self.from = from
        self.to = to
        self.outcome = outcome
        self.reason = reason
        self.retryAfter = retryAfter
        self.dryRun = dryRun
    }

    /// The row as one JSON object (one line of a JSON Lines report), keys in a fixed order.
    public var json: JSONValue {
        .object([
            "accountId": .string(accountID), "step": .string(step.rawValue), "from": .string(from.rawValue),
            "to": .string(to.rawValue), "outcome": .string(outcome.rawValue), "reason": reason.map(JSONValue.string),
            "retryAfter": retryAfter.map { .string(RFC3339.utc(seconds: $0)) },
            "heldBy": heldBy.map(JSONValue.string), "dryRun": .bool(dryRun),
        ])
    }

    /// One JSON Lines record, without the newline.
    public var jsonLine: String { json.serializedString }
}
