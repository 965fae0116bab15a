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
final class BlockingThreadPool: TaskExecutor, @unchecked Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var next = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let threads: Int

    /// Starts `threads` threads.
    init(threads: Int) {
        self.threads = max(1, threads)
        for _ in 0..<self.threads {
            Thread.detachNewThread { [self] in work() }
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            wake.signal()
        } else {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// Lets the threads end once the jobs already queued have run.
    func shutdown() {
        state.withLock { $0.closed = true }
        for _ in 0..<threads { wake.signal() }
    }

    private func work() {
        BlockingRunner.markMayBlock()
        let executor = asUnownedTaskExecutor()
        while true {
            wake.wait()
            let job = state.withLock { state -> UnownedJob? in
                guard state.next < state.jobs.count else { return nil }
                let job = state.jobs[state.next]
                state.next += 1
                // Drop what has run once the queue is drained, so it does not grow with the batch.
                if state.next == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.next = 0
                }
                return job
            }
            if let job {
                job.runSynchronously(on: executor)
            } else if state.withLock({ $0.closed }) {
                return
            }
        }
    }
}
