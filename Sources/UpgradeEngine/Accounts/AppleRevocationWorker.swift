/// Runs `AppleRevocationSender.sendDue` every `intervalMilliseconds` (a `QueueWorker`), from
/// `start()` until `stop()`, so revocations a deletion could not send at once (Apple unavailable, a
/// process killed after its commit) are sent by `serve`.
public final class AppleRevocationWorker: Sendable {
    let worker: QueueWorker

    public init(
        sender: AppleRevocationSender,
        intervalMilliseconds: Int = 5000,
        clock: @escaping @Sendable () -> Int64,
        onError: @escaping @Sendable (StorageError) -> Void = { _ in }
    ) {
        worker = QueueWorker(intervalMilliseconds: intervalMilliseconds, onError: onError) {
            () async throws(StorageError) in
            _ = try await sender.sendDue(clock: clock)
        }
    }

    /// Starts the loop; its first pass runs at once. A second call while running does nothing.
    public func start() { worker.start() }

    /// Stops the loop and waits for a pass in progress to end.
    public func stop() { worker.stop() }
}
