/// The end of a `prepare` or `complete` batch: counts per outcome, and why it stopped early if it did.
public struct TransferBatchSummary: Sendable, Equatable {
    /// Why a batch ended before visiting every account. Rows committed before the stop stay
    /// committed; re-running resumes with the rest.
    public struct Stop: Sendable, Equatable, CustomStringConvertible {
        public struct Code: Hashable, Sendable, CustomStringConvertible {
            private enum Base: String {
                case configuration
                case appleUnavailable = "apple-unavailable"
                case interrupted
                case storage
            }
            private let base: Base
            private init(_ base: Base) { self.base = base }

            /// Apple refused our client credentials (`invalid_client` and the like), or the stored
            /// transfer was prepared for another team than the configured one: every row would fail
            /// the same way, so none is tried. Fix the configuration and re-run.
            public static let configuration = Code(.configuration)
            /// Apple stayed unreachable for many rows in a row; re-run later.
            public static let appleUnavailable = Code(.appleUnavailable)
            /// The batch's task was cancelled.
            public static let interrupted = Code(.interrupted)
            /// The store could not list the accounts.
            public static let storage = Code(.storage)

            public var name: String { base.rawValue }
            public var description: String { base.rawValue }
        }

        public let code: Code
        public let message: String

        public init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

        public var description: String { "\(code.name): \(message)" }
    }

    public var step: TransferRowReport.Step
    public var dryRun: Bool
    /// Reported rows per outcome (every outcome present, zero when none).
    public var outcomes: [TransferRowReport.Outcome: Int]
    /// Rows per failure reason, for the summary line.
    public var reasons: [String: Int]
    /// Skipped rows per reason (`other-team`, `in-recipient-team`, ...), for the summary line: a
    /// batch run with the other team's settings skips every row, and says why.
    public var skipReasons: [String: Int]
    public var stop: Stop?
    /// The row limit was reached; accounts after it were not visited.
    public var limitReached: Bool
    /// The latest `retryAfter` of the rows skipped as `earlier-window-open`: a rerun after it
    /// prepares them all.
    public var retryAfter: Int64?

    public init(step: TransferRowReport.Step, dryRun: Bool) {
        self.step = step
        self.dryRun = dryRun
        outcomes = Dictionary(uniqueKeysWithValues: TransferRowReport.Outcome.allCases.map { ($0, 0) })
        reasons = [:]
        skipReasons = [:]
        stop = nil
        limitReached = false
        retryAfter = nil
    }

    public var rows: Int { outcomes.values.reduce(0, +) }
    public var failedRows: Int { outcomes.filter { $0.key.isFailure }.map(\.value).reduce(0, +) }

    /// The batch commands' exit status (README, Command line): 2 when the configuration was refused (nothing
    /// more can succeed until it is fixed), 1 when rows failed or the batch stopped early for another
    /// reason, 0 when every row is fine.
    public var exitStatus: Int32 {
        if let stop { return stop.code == .configuration ? 2 : 1 }
        return failedRows > 0 ? 1 : 0
    }

    mutating func add(_ row: TransferRowReport) {
        outcomes[row.outcome, default: 0] += 1
        if row.outcome.isFailure, let reason = row.reason {
            reasons[reason, default: 0] += 1
        }
        if row.outcome == .skipped, let reason = row.reason {
            skipReasons[reason, default: 0] += 1
        }
        if let after = row.retryAfter { retryAfter = max(retryAfter ?? after, after) }
    }

    /// One line, e.g. `prepare: 120 rows: 100 succeeded, 15 already-done, 3 skipped (other-team 3),
    /// 2 failed (invalid-request 2)`: skip reasons follow the skipped count, failure reasons the line.
    public var line: String {
        func listed(_ counts: [String: Int]) -> String {
            " (" + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        let counts = TransferRowReport.Outcome.allCases.compactMap { outcome -> String? in
            guard let count = outcomes[outcome], count > 0 else { return nil }
            let text = "\(count) \(outcome.rawValue)"
            return outcome == .skipped && !skipReasons.isEmpty ? text + listed(skipReasons) : text
        }
        var text = "\(step.rawValue)\(dryRun ? " (dry run)" : ""): \(rows) row\(rows == 1 ? "" : "s")"
        if !counts.isEmpty { text += ": " + counts.joined(separator: ", ") }
        if !reasons.isEmpty { text += listed(reasons) }
        if limitReached { text += "; row limit reached" }
        return text
    }
}
