import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs async work to completion on the calling thread, for threads that are allowed to block
/// (the HTTP server's workers, a CLI's main thread).
///
/// The work runs as a task whose executor preference is the calling thread: its own code, the
/// default actors it calls and its structured child tasks all run here, so a request that awaits
/// a database write and an Apple call costs no thread hand-offs. Unstructured `Task`s it starts
/// do not inherit the preference and run on Swift's pool as usual. While the work runs, the
/// thread is marked as one that may block (`mayBlock`), and blocking I/O made from async code
/// (`AppleClientTransport`) runs inline instead of moving to a thread of its own.
public enum BlockingRunner {
    public static func run<T: Sendable, E: Error>(
        _ body: @escaping @Sendable () async throws(E) -> T
    ) throws(E) -> T {
        let executor = CallingThreadExecutor()
        let previous = pthread_getspecific(mayBlockKey)
        pthread_setspecific(mayBlockKey, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(mayBlockKey, previous) }
        Task(executorPreference: executor) {
            let outcome: Result<T, E>
            do throws(E) {
                outcome = .success(try await body())
            } catch {
                outcome = .failure(error)
            }
            executor.finish(outcome)
        }
        return try executor.runUntilFinished(as: Result<T, E>.self).get()
    }

    /// Whether the current thread is running `run`'s work and so may block.
    static var mayBlock: Bool { pthread_getspecific(mayBlockKey) != nil }

    /// Marks the current thread as one that may block for as long as it lives (`BlockingThreadPool`).
    static func markMayBlock() {
        pthread_setspecific(mayBlockKey, UnsafeRawPointer(bitPattern: 1))
    }

    private static let mayBlockKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key is available")
        return key
    }()
}

/// A task executor whose jobs run on the thread that called `runUntilFinished`.
///
/// `@unchecked Sendable`: every stored property is either immutable or a `Mutex`; the semaphore
/// only wakes the draining thread.
private final class CallingThreadExecutor: TaskExecutor, @unchecked Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var outcome: (any Sendable)?
        /// Set once the draining thread has left; later jobs go to the global executor.
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

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
            // Only a job of work that outlived the call (nothing of ours does) can arrive here;
            // running it elsewhere is better than losing it.
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    func finish(_ outcome: some Sendable) {
        state.withLock { $0.outcome = outcome }
        wake.signal()
    }

    func runUntilFinished<Outcome: Sendable>(as type: Outcome.Type) -> Outcome {
        let executor = asUnownedTaskExecutor()
        while true {
            let (jobs, outcome) = state.withLock { state -> ([UnownedJob], (any Sendable)?) in
                let jobs = state.jobs
                state.jobs.removeAll(keepingCapacity: true)
                if jobs.isEmpty, state.outcome != nil { state.closed = true }
                return (jobs, state.outcome)
            }
            if jobs.isEmpty {
                if let outcome {
                    // `finish` is only ever called with an `Outcome`.
                    return outcome as! Outcome
                }
                wake.wait()
                continue
            }
            for job in jobs { job.runSynchronously(on: executor) }
        }
    }
}
