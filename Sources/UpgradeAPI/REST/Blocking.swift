import Dispatch
import Synchronization

/// Runs async work from a worker thread and waits for it. Handlers run on the server's dedicated
/// worker threads, which may block; the async part (an Apple call, a JWKS fetch) runs on Swift's
/// concurrency pool meanwhile.
func blockingWait<T: Sendable, E: Error>(_ body: @escaping @Sendable () async throws(E) -> T) throws(E) -> T {
    let result = Mutex<Result<T, E>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, E>
        do throws(E) {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    // The semaphore orders the write before this read; the value is always set here.
    return try result.withLock { $0! }.get()
}
