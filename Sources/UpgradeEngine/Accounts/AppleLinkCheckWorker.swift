/// Runs `AppleLinkChecker.checkDue` every `intervalMilliseconds` (a `QueueWorker`), from `start()`
/// until `stop()`, so `serve` checks every Apple link's refresh token once per period. Every
/// instance on one database runs one; the checks' claims keep each link to one of them.
public final class AppleLinkCheckWorker: Sendable {
    /// What each pass runs, with the policy it was given.
    public let checker: AppleLinkChecker
    let worker: QueueWorker

    public init(
        checker: AppleLinkChecker,
        intervalMilliseconds: Int = 1000,
        clock: @escaping @Sendable () -> Int64,
        onError: @escaping @Sendable (StorageError) -> Void = { _ in }
    ) {
        self.checker = checker
        // A pass cut short with due links left is followed at once, so the rate is what paces.
        worker = QueueWorker(intervalMilliseconds: intervalMilliseconds, onError: onError) {
            () async throws(StorageError) -> Bool in
            try await checker.checkDue(clock: clock).more
        }
    }

    /// Starts the loop; its first pass runs at once. A second call while running does nothing.
    public func start() { worker.start() }

    /// Stops the loop and waits for a pass in progress to end.
    public func stop() { worker.stop() }
}
