import Dispatch
import Synchronization

/// The jobs of a task executor whose own threads run them (`BlockingRunner`'s calling thread,
/// `BlockingThreadPool`'s threads), oldest first. `wake` is signalled once for each job queued.
/// Once the queue is closed, a job that still comes is given to Swift's global executor: only work
/// that outlived its executor can send one, and running it elsewhere is better than losing it.
final class ExecutorJobQueue: Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var next = 0
        var closed = false
    }

    private let state = Mutex(State())
    let wake = DispatchSemaphore(value: 0)

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

    /// The oldest job not yet taken, if any.
    func take() -> UnownedJob? {
        state.withLock { state in
            guard state.next < state.jobs.count else { return nil }
            let job = state.jobs[state.next]
            state.next += 1
            // Drop what was taken once the queue is drained, so that it does not grow with the work.
            if state.next == state.jobs.count {
                state.jobs.removeAll(keepingCapacity: true)
                state.next = 0
            }
            return job
        }
    }

    /// Every job not yet taken. With `closingIfEmpty`, a queue found empty is closed in the same
    /// step, so that no job can slip in between finding it empty and closing it.
    func takeAll(closingIfEmpty: Bool) -> [UnownedJob] {
        state.withLock { state in
            let jobs = Array(state.jobs[state.next...])
            state.jobs.removeAll(keepingCapacity: true)
            state.next = 0
            if jobs.isEmpty && closingIfEmpty { state.closed = true }
            return jobs
        }
    }

    func close() {
        state.withLock { $0.closed = true }
    }

    var isClosed: Bool { state.withLock { $0.closed } }
}
