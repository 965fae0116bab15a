import Dispatch
import Foundation
import Synchronization

/// Runs one pass over a queue every `intervalMilliseconds` on a thread of its own, from `start()`
/// until `stop()`: the loop of the Apple revocation queue and the webhook outbox. Every instance on
/// one database may run one: the queues' claims keep a row to one of them at a time.
public final class QueueWorker: Sendable {
    private struct Loop: Sendable {
        let stop = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
    }

    let intervalMilliseconds: Int
    /// One pass; true when it stopped with work left, so the next starts at once.
    let pass: @Sendable () async throws(StorageError) -> Bool
    let onError: @Sendable (StorageError) -> Void
    private let loop: Mutex<Loop?> = Mutex(nil)

    public convenience init(
        intervalMilliseconds: Int,
        onError: @escaping @Sendable (StorageError) -> Void = { _ in },
        pass: @escaping @Sendable () async throws(StorageError) -> Void
    ) {
        self.init(intervalMilliseconds: intervalMilliseconds, onError: onError) { () async throws(StorageError) in
            try await pass()
            return false
        }
    }

    /// A loop whose pass says whether it stopped with work left (true): the next pass then starts
    /// at once instead of after `intervalMilliseconds`, so a pass cut short to keep `stop()` quick
    /// costs no throughput.
    public init(
        intervalMilliseconds: Int,
        onError: @escaping @Sendable (StorageError) -> Void = { _ in },
        passAgain pass: @escaping @Sendable () async throws(StorageError) -> Bool
    ) {
        self.intervalMilliseconds = intervalMilliseconds
        self.onError = onError
        self.pass = pass
    }

    /// Starts the loop; its first pass runs at once. A second call while running does nothing.
    public func start() {
        let current = Loop()
        let started = loop.withLock { running in
            guard running == nil else { return false }
            running = current
            return true
        }
        guard started else { return }
        let milliseconds = intervalMilliseconds
        let pass = self.pass
        let onError = self.onError
        // A thread of its own: the loop blocks between passes and during calls out, which a shared
        // queue's thread must not.
        Thread.detachNewThread {
            defer { current.stopped.signal() }
            let interval = DispatchTimeInterval.milliseconds(max(1, milliseconds))
            var wait = interval
            repeat {
                do throws(StorageError) {
                    let again = try BlockingRunner.run { () async throws(StorageError) in try await pass() }
                    wait = again ? .milliseconds(0) : interval
                } catch {
                    // The database is unavailable: the next pass tries again.
                    onError(error)
                    wait = interval
                }
            } while current.stop.wait(timeout: .now() + wait) == .timedOut
        }
    }

    /// Stops the loop and waits for a pass in progress to end (calls out are bounded by their
    /// timeouts). Does nothing if it is not running.
    public func stop() {
        guard let current = loop.withLock({ $0.take() }) else { return }
        current.stop.signal()
        current.stopped.wait()
    }
}
