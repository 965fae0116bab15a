import Glibc

/// A glibc adaptive mutex: spins briefly, then sleeps on a plain futex. The event loops' ownership
/// and the worker pool use it because their critical sections are short and often contended.
///
/// Not `Synchronization.Mutex`, which on Linux is a priority-inheritance futex: there a failed
/// `withLockIfAvailable` is a system call (`FUTEX_TRYLOCK_PI`), which a worker finishing a request
/// while its loop is busy would pay every time, and every contended hand-over goes through the
/// kernel's PI bookkeeping. Here a failed try is one atomic instruction.
///
/// `@unchecked Sendable`: the mutex lives in heap memory that never moves and is destroyed in
/// `deinit`, when no thread can hold a reference.
final class AdaptiveMutex: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() {
        pthread_mutex_lock(mutex)
    }

    func unlock() {
        pthread_mutex_unlock(mutex)
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` if the mutex is free at this moment; nil, without waiting, if it is held.
    func withLockIfAvailable<T>(_ body: () throws -> T) rethrows -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value reached only under an `AdaptiveMutex`: the server's `Synchronization.Mutex`.
///
/// Not `Mutex` itself: on Linux a contended `Mutex` is handed over inside the kernel
/// (`FUTEX_LOCK_PI`), where ThreadSanitizer cannot see it, so every value behind one shows up as a
/// race in `Scripts/test`'s ThreadSanitizer run and real races would hide among them. A pthread
/// mutex is one ThreadSanitizer knows.
///
/// `@unchecked Sendable`: `value` is read and written only inside `withLock`.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex = AdaptiveMutex()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&value)
    }
}
