import Foundation
import Synchronization

/// A task executor over threads of its own that may block, for async work that blocks: a transfer
/// batch's rows, each a database transaction or two and an exchange with Apple over libcurl.
///
/// Work given this executor as its preference (`addTask(executorPreference:)`) runs on these
/// threads, which are marked as `BlockingRunner.mayBlock`: an exchange with Apple runs on the row's
/// own thread instead of on a thread started for it, and a row that waits for SQLite's lock or a
/// checkpoint's fsync holds its own thread, never one of Swift's cooperative threads (one per core),
/// on which every other row would wait. Jobs run in the order they came. `shutdown()` ends the
/// threads; a job that comes after it runs on Swift's pool.
final class BlockingThreadPool: TaskExecutor, Sendable {
    private let queue = ExecutorJobQueue()
    private let threads: Int

    /// Starts `threads` threads.
    init(threads: Int) {
        self.threads = max(1, threads)
        for _ in 0..<self.threads {
            Thread.detachNewThread { [self] in work() }
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        queue.enqueue(job)
    }

    /// Lets the threads end once the jobs already queued have run.
    func shutdown() {
        queue.close()
        for _ in 0..<threads { queue.wake.signal() }
    }

    private func work() {
        BlockingRunner.markMayBlock()
        let executor = asUnownedTaskExecutor()
        while true {
            queue.wake.wait()
            if let job = queue.take() {
                job.runSynchronously(on: executor)
            } else if queue.isClosed {
                return
            }
        }
    }
}
