import CSystem
import Glibc
import Synchronization

/// A fixed set of threads running `HTTPHandler.handle`, fed by a FIFO queue that sheds by delay.
///
/// Event loops never wait here: `submit` either queues a job at once or refuses it, and the loop
/// answers 503. It refuses by delay, not by count (docs/architecture.md §11.6): a job is queued
/// unless the oldest queued job has waited longer than `maxQueueDelay`, a standing queue that the
/// workers are not draining in time. The count cap (`capacity`) only bounds memory; by default it
/// is `maxConnections × maxPipelinedRequests`, more jobs than the connections can have pending, so
/// it is never what refuses. The ring grows on demand, so a quiet server does not allocate it whole.
/// A worker delivers its result to the job's loop (`EventLoop.complete`): itself while the loop
/// sleeps, else through the loop's mailbox; responses leave in request order.
///
/// Idle workers park on a futex word of their own and are woken last-in, first-out: under light load
/// the same worker takes request after request, so its stack, its caches and the database connection
/// it last used are still warm, and the others sleep. (One shared condition wakes the workers in
/// turn, each one cold.) Parking on a word, not a `pthread_cond_t`: a woken worker does not contend
/// for the mutex its waker still holds, and its next unlock is not a futex call (glibc marks a mutex
/// reacquired in `pthread_cond_wait` as contended); measured, two system calls less per request.
///
/// The protocol: a worker adds itself to `idle` and resets its word to 0 under `mutex`, then parks
/// outside it while the word is 0. A waker removes workers from `idle` under `mutex` and, after
/// unlocking, sets each one's word to 1 and wakes it. A worker in `idle` is thus always either parked
/// or about to find its word set; a wake that arrives late only makes it look again.
///
/// `@unchecked Sendable`: every stored `var` (`queue`, `head`, `count`, `idle`, `stopping`) is read
/// and written only while holding `mutex`; the words are touched only through CSystem's atomic
/// park functions. The words live in heap memory that never moves and are freed in
/// `deinit`, after `join`.
final class WorkerPool: @unchecked Sendable {
    struct Job {
        let request: HTTPRequest
        let loop: EventLoop
        let connectionID: UInt64
        let sequence: UInt64
        /// When it was queued (`MonotonicClock`), set by `submit`.
        var queuedAt: UInt64 = 0
    }

    private let handler: any HTTPHandler
    private let onEvent: @Sendable (HTTPServerEvent) -> Void
    private let mutex = AdaptiveMutex()
    /// One parking word per worker, allocated in `start`.
    private var words = UnsafeMutablePointer<UInt32>.allocate(capacity: 0)
    private var queue: [Job?]
    private var head = 0
    private var count = 0
    /// The most jobs `queue` may grow to.
    private let capacity: Int
    /// Nanoseconds the oldest queued job may have waited for a new one to be queued.
    private let maxQueueDelay: UInt64
    /// Jobs taken by workers, the sum and the maximum of their waits (ns), for `HTTPServer.statistics`.
    let dequeued = Atomic<Int>(0)
    let queueWaitTotal = Atomic<Int>(0)
    let queueWaitMaximum = Atomic<Int>(0)
    /// Sleeping workers, the most recently idle last.
    private var idle: [Int] = []
    private var stopping = false
    private var threads: [SystemThread] = []

    init(
        handler: any HTTPHandler,
        queueCapacity: Int,
        maxQueueDelay: Duration,
        onEvent: @escaping @Sendable (HTTPServerEvent) -> Void
    ) {
        self.handler = handler
        self.onEvent = onEvent
        self.capacity = queueCapacity
        self.maxQueueDelay = maxQueueDelay.nanoseconds
        self.queue = Array(repeating: nil, count: min(queueCapacity, 64))
    }

    deinit {
        words.deallocate()
    }

    /// Starts the threads; called once, before any `submit`.
    func start(workerCount: Int) throws(HTTPServerError) {
        words.deallocate()
        words = .allocate(capacity: workerCount)
        words.initialize(repeating: 0, count: workerCount)
        for index in 0..<workerCount {
            threads.append(try SystemThread.spawn(name: "http-worker-\(index)") { [self] in runWorker(index) })
        }
    }

    /// Queues a job, or returns false when the oldest queued job has waited longer than
    /// `maxQueueDelay`, the queue is at `capacity` or the pool is stopping. Does not wake a worker:
    /// the caller calls `wakeWorkers(upTo:)` once after a batch of submissions, which saves a futex
    /// wake and a contended lock per request under load.
    func submit(_ job: Job) -> Bool {
        var job = job
        job.queuedAt = MonotonicClock.now()
        mutex.lock()
        defer { mutex.unlock() }
        guard !stopping, count < capacity else { return false }
        if count > 0, let oldest = queue[head], job.queuedAt > oldest.queuedAt,
            job.queuedAt - oldest.queuedAt > maxQueueDelay
        {
            return false
        }
        if count == queue.count { grow() }
        queue[(head + count) % queue.count] = job
        count += 1
        return true
    }

    /// Doubles the ring (up to `capacity`), its jobs moved to the front in order. Under `mutex`.
    private func grow() {
        var larger = [Job?](repeating: nil, count: min(capacity, max(1, queue.count * 2)))
        for offset in 0..<count { larger[offset] = queue[(head + offset) % queue.count] }
        queue = larger
        head = 0
    }

    /// How long the oldest queued job has waited (ns), 0 when none waits.
    var oldestQueuedWait: UInt64 {
        let now = MonotonicClock.now()
        mutex.lock()
        defer { mutex.unlock() }
        guard count > 0, let oldest = queue[head], now > oldest.queuedAt else { return 0 }
        return now - oldest.queuedAt
    }

    /// Wakes idle workers for `submitted` newly queued jobs, the most recently idle first. Busy
    /// workers find queued jobs on their own.
    func wakeWorkers(upTo submitted: Int) {
        mutex.lock()
        let wake = min(submitted, idle.count, count)
        guard wake > 0 else {
            mutex.unlock()
            return
        }
        // Usually one worker: take it without building an array.
        let first = idle.removeLast()
        var more: [Int] = []
        if wake > 1 {
            more = Array(idle.suffix(wake - 1))
            idle.removeLast(wake - 1)
        }
        mutex.unlock()
        csystem_unpark(words + first)
        for worker in more { csystem_unpark(words + worker) }
    }

    var queuedCount: Int {
        mutex.lock()
        defer { mutex.unlock() }
        return count
    }

    /// Lets the workers finish every queued job, then exit; waits for them. Called once, after the
    /// event loops have stopped submitting.
    func stopAndJoin() {
        mutex.lock()
        stopping = true
        idle.removeAll()
        mutex.unlock()
        // Worker `index` parks on word `index`; only the started ones are woken and joined.
        for index in threads.indices { csystem_unpark(words + index) }
        for thread in threads { thread.join() }
        threads = []
    }

    private func runWorker(_ worker: Int) {
        while let job = nextJob(worker) {
            let now = MonotonicClock.now()
            let wait = Int(clamping: now > job.queuedAt ? now - job.queuedAt : 0)
            dequeued.wrappingAdd(1, ordering: .relaxed)
            queueWaitTotal.wrappingAdd(wait, ordering: .relaxed)
            var maximum = queueWaitMaximum.load(ordering: .relaxed)
            while wait > maximum {
                let (exchanged, current) = queueWaitMaximum.compareExchange(
                    expected: maximum,
                    desired: wait,
                    ordering: .relaxed
                )
                if exchanged { break }
                maximum = current
            }
            perform(job)
        }
    }

    /// Runs `job` and delivers its result to its loop.
    private func perform(_ job: Job) {
        let response = respond(to: job.request)
        job.loop.complete(connectionID: job.connectionID, sequence: job.sequence, response: response)
    }

    private func nextJob(_ worker: Int) -> Job? {
        mutex.lock()
        defer { mutex.unlock() }
        while count == 0 {
            if stopping { return nil }
            if !idle.contains(worker) { idle.append(worker) }
            csystem_park_reset(words + worker)
            mutex.unlock()
            while csystem_park_load(words + worker) == 0 { csystem_park(words + worker, 0) }
            mutex.lock()
        }
        // Woken late, or found work before anyone woke it: it is not idle any more.
        if let position = idle.lastIndex(of: worker) { idle.remove(at: position) }
        let job = queue[head]
        queue[head] = nil
        head = (head + 1) % queue.count
        count -= 1
        return job
    }

    /// The handler's answer to `request`, on the calling thread: a worker's, or the event loop thread
    /// that kept the request (`EventLoop.keepForThisThread`).
    func respond(to request: HTTPRequest) -> HTTPResponse {
        do {
            return try handler.handle(request)
        } catch let problem as HTTPProblem {
            return problem.response
        } catch {
            onEvent(.handlerFailed(requestID: request.id, error: String(describing: error)))
            return HTTPProblem.internalError.response
        }
    }
}
