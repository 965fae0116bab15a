import Dispatch
import Synchronization
import Testing

@testable import UpgradeEngine

/// `QueueWorker`'s loop: a pass that says it left work runs again without waiting the interval.
@Suite("Queue worker")
struct QueueWorkerTests {
    @Test("a pass that left work is followed at once, not after the interval")
    func passAgainAtOnce() {
        let calls = Mutex(0)
        let fourth = DispatchSemaphore(value: 0)
        // An interval no test waits out: only passes that run at once reach the fourth call.
        let worker = QueueWorker(intervalMilliseconds: 600_000) { () async throws(StorageError) -> Bool in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            if call == 4 { fourth.signal() }
            return call < 4
        }
        worker.start()
        #expect(fourth.wait(timeout: .now() + 10) == .success, "passes after the first waited the interval")
        worker.stop()
        #expect(calls.withLock { $0 } == 4, "the fourth pass left nothing: the loop waits")
    }
}
