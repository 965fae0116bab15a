import Dispatch
import Foundation
import Synchronization

/// Runs `AppleRevocationSender.sendDue` every `intervalMilliseconds` on a thread of its own, from `start()`
/// until `stop()`, so revocations a deletion could not send at once (Apple unavailable, a process
/// killed after its commit) are sent by `serve`. Every instance on one database may run one: the
/// sender's claims keep a row to one of them at a time.
public final class AppleRevocationWorker: Sendable {
    private struct Loop: Sendable {
        let stop = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
    }

    let sender: AppleRevocationSender
    let intervalMilliseconds: Int
    let clock: @Sendable () -> Int64
    let onError: @Sendable (StorageError) -> Void
    private let loop: Mutex<Loop?> = Mutex(nil)

    public init(
        sender: AppleRevocationSender,
        intervalMilliseconds: Int = 5000,
        clock: @escaping @Sendable () -> Int64,
        onError: @escaping @Sendable (StorageError) -> Void = { _ in }
    ) {
        self.sender = sender
        self.intervalMilliseconds = intervalMilliseconds
        self.clock = clock
        self.onError = onError
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
        // A thread of its own: the loop blocks between passes and during Apple calls, which a shared
        // queue's thread must not.
        let sender = self.sender
        let clock = self.clock
        let onError = self.onError
        Thread.detachNewThread {
            defer { current.stopped.signal() }
            repeat {
                do throws(StorageError) {
                    try BlockingRunner.run { () async throws(StorageError) in
                        _ = try await sender.sendDue(now: clock())
                    }
                } catch {
                    // The database is unavailable: the next pass tries again.
                    onError(error)
                }
            } while current.stop.wait(timeout: .now() + .milliseconds(max(1, milliseconds))) == .timedOut
        }
    }

    /// Stops the loop and waits for a pass in progress to end (a call to Apple is bounded by the
    /// client's timeouts). Does nothing if it is not running.
    public func stop() {
        guard let current = loop.withLock({ $0.take() }) else { return }
        current.stop.signal()
        current.stopped.wait()
    }
}
