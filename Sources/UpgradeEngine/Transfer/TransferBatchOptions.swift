/// How a `prepare` or `complete` batch runs (docs/architecture.md §6.3).
public struct TransferBatchOptions: Sendable {
    /// Report what each row would do without any write and without any per-user Apple call. One team
    /// access token is still requested, because that changes nothing at Apple and is how a wrong
    /// key or team shows up before the real run.
    public var dryRun: Bool
    /// Rows in flight at once (1...64).
    public var concurrency: Int
    /// Stop after this many rows needed work (an Apple call or a recorded window closure); rows
    /// already done do not count. For a small first run before the whole population. `nil`: no limit.
    public var limit: Int?
    /// Tries per Apple call when Apple answers 429/5xx or cannot be reached (1...10).
    public var maxAttempts: Int
    /// First retry delay; each further one doubles, up to ``retryMaxDelayMilliseconds``, and is
    /// randomised between half and all of that so that parallel rows do not retry in step.
    public var retryBaseDelayMilliseconds: UInt64
    public var retryMaxDelayMilliseconds: UInt64
    /// Stop the batch once this many rows in a row ended with Apple unavailable: at that point every
    /// further row would only wait out its retries too. Re-running resumes where it stopped.
    public var unavailableRowsBeforeStop: Int
    /// Called once per reported row, one call at a time, in completion order.
    public var onRow: (@Sendable (TransferRowReport) -> Void)?
    /// The time now, in Unix seconds, read as each row begins its step (the window check) and
    /// again when it records the outcome (the audit row's time), since a batch may run for hours.
    /// `nil`: the batch's `now` throughout.
    public var clock: (@Sendable () -> Int64)?

    public init(
        dryRun: Bool = false,
        concurrency: Int = 4,
        limit: Int? = nil,
        maxAttempts: Int = 5,
        retryBaseDelayMilliseconds: UInt64 = 500,
        retryMaxDelayMilliseconds: UInt64 = 30_000,
        unavailableRowsBeforeStop: Int = 20,
        onRow: (@Sendable (TransferRowReport) -> Void)? = nil,
        clock: (@Sendable () -> Int64)? = nil
    ) {
        self.dryRun = dryRun
        self.concurrency = concurrency
        self.limit = limit
        self.maxAttempts = maxAttempts
        self.retryBaseDelayMilliseconds = retryBaseDelayMilliseconds
        self.retryMaxDelayMilliseconds = retryMaxDelayMilliseconds
        self.unavailableRowsBeforeStop = unavailableRowsBeforeStop
        self.onRow = onRow
        self.clock = clock
    }

    public static let concurrencyRange = 1...64
    public static let maxAttemptsRange = 1...10

    func validate() throws(TransferFailure) {
        guard Self.concurrencyRange.contains(concurrency) else {
            throw TransferFailure(.validation, "concurrency must be between 1 and 64, got \(concurrency)")
        }
        guard Self.maxAttemptsRange.contains(maxAttempts) else {
            throw TransferFailure(.validation, "attempts per Apple call must be between 1 and 10, got \(maxAttempts)")
        }
        if let limit, limit < 1 {
            throw TransferFailure(.validation, "the row limit must be at least 1, got \(limit)")
        }
        guard retryBaseDelayMilliseconds <= retryMaxDelayMilliseconds, retryMaxDelayMilliseconds <= 600_000 else {
            throw TransferFailure(.validation, "retry delays must satisfy base <= max <= 600000 ms")
        }
        guard unavailableRowsBeforeStop >= 1 else {
            throw TransferFailure(.validation, "unavailableRowsBeforeStop must be at least 1")
        }
    }
}
