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
private final class CallingThreadExecutor: TaskExecutor, Sendable {
    private let queue = ExecutorJobQueue()
    private let outcome = Mutex<(any Sendable)?>(nil)

    func enqueue(_ job: consuming ExecutorJob) {
        queue.enqueue(job)
    }

    func finish(_ outcome: some Sendable) {
        self.outcome.withLock { $0 = outcome }
        queue.wake.signal()
    }

    /// Runs jobs until the work has finished and no job is left; later jobs go to the global
    /// executor.
    func runUntilFinished<Outcome: Sendable>(as type: Outcome.Type) -> Outcome {
        let executor = asUnownedTaskExecutor()
        while true {
            let outcome = self.outcome.withLock { $0 }
            let jobs = queue.takeAll(closingIfEmpty: outcome != nil)
            if jobs.isEmpty {
                if let outcome {
                    // `finish` is only ever called with an `Outcome`.
                    return outcome as! Outcome
                }
                queue.wake.wait()
                continue
            }
            for job in jobs { job.runSynchronously(on: executor) }
        }
    }
}
