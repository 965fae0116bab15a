import CSystem
import Glibc
import Synchronization

/// One epoll instance owning a share of the connections, run by `threadsPerEventLoop` threads.
///
/// Thread ownership (nothing here is checked by the compiler, hence `@unchecked Sendable`):
/// - Immutable after `init` and safe from any thread: `index`, `context`, `counters` (atomics),
///   `epollFD`, `wakeFD`, `threadCount`; `loopThreadsHandling` is an atomic.
/// - `mailbox` is mutable state any thread may touch, always under its lock: workers post
///   results, the acceptor loop posts new connections, `HTTPServer` posts shutdown.
/// - Every other stored property (the connections above all) is read and written only while
///   holding `ownership`. A loop thread holds it from the moment `epoll_wait` returns until it
///   goes back to sleep, except while it runs a handler; a worker with a finished response takes
///   it only if it is free at that moment (`complete`), so while the loop sleeps the worker writes
///   the response itself and no loop thread is woken for it. `becomeAcceptor` and
///   `watchShutdownSignals` run before the loop's threads start, and `pthread_create` orders their
///   writes before the threads' first read.
/// So one thread at a time touches a connection, and a connection's descriptor is closed only under
/// `ownership`: a worker that holds it and finds the connection's id in the table writes to that
/// connection, never to a reused descriptor number.
///
/// The loop's threads all wait in `epoll_wait` on the one instance, and each event wakes one of
/// them. Connections and `wakeFD` are edge-triggered, so an event is reported to one thread only
/// (level-triggered, the kernel would wake every waiter while the data stays unread); the listener
/// and the signal descriptor stay level-triggered, where a spare wake-up finds nothing to do. The
/// thread a request woke keeps that request and runs its handler after releasing `ownership` when
/// another thread of the loop is not running one (`loopThreadsHandling`): that thread is asleep in
/// `epoll_wait` or about to be, so the loop stays watched, and the request needs no worker woken.
/// Further requests of the same wake-up go to the worker pool.
///
/// The descriptors are closed in `deinit`, which runs only after the threads have exited and every
/// worker job holding the loop is gone, so no thread can write to a reused `wakeFD`.
final class EventLoop: @unchecked Sendable {
    let index: Int
    let context: ServerContext
    let counters = LoopCounters()
    let epollFD: Int32
    let wakeFD: Int32
    /// Threads running this loop (`Configuration.threadsPerEventLoop`).
    let threadCount: Int
    /// Loop threads running a handler at this moment; one may start only while this is below
    /// `threadCount - 1`. Raised under `ownership`, lowered when the handler has returned.
    private let loopThreadsHandling = Atomic<Int>(0)

    private struct Completion: Sendable {
        let connectionID: UInt64
        let sequence: UInt64
        let response: HTTPResponse
    }

    /// A result whose response may not be written before `due` (`HTTPResponse.notBefore`, on the
    /// monotonic clock).
    private struct Held: Sendable {
        let due: UInt64
        let completion: Completion
    }

    private struct Mailbox: Sendable {
        var completions: [Completion] = []
        var held: [Held] = []
        var adopted: [Accepted] = []
        var shutdownRequested = false
        /// A wake-up is written and not yet consumed: later posts need not write another.
        var wakePending = false
        /// The loop has exited; posts are refused so nothing is stranded here.
        var closed = false
    }

    /// A connection the acceptor has counted in and hands to a loop.
    struct Accepted: Sendable {
        let fd: Int32
        let client: HTTPClientAddress?
        /// Its `Connection.clientKey`.
        let clientKey: HTTPClientAddress?
    }

    private let mailbox = Locked(Mailbox())
    /// Held by whoever touches the loop's state: see the type's comment.
    private let ownership = AdaptiveMutex()
    /// Set under `ownership` when the loop has exited: a late result is then dropped, as a post to
    /// the closed mailbox is.
    private var finished = false

    // MARK: Loop state (under `ownership`)

    static let listenerToken: UInt64 = 1
    static let wakeToken: UInt64 = 2
    static let signalToken: UInt64 = 3
    static let readBufferSize = 64 * 1024

    private var listenFD: Int32 = -1
    private var peers: [EventLoop] = []
    private var nextPeer = 0
    private var acceptPausedUntil: UInt64?
    private var refusingConnections = false
    private var signalFD: Int32 = -1
    private var onShutdownSignal: (@Sendable () -> Void)?

    private var table: [Connection?] = []
    private var active: [Connection] = []
    private var generation: UInt64 = 0
    private var requestCounter: UInt64 = 0
    private var date = HTTPDate()
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readBufferSize, alignment: 16)
    private var draining = false
    private var drainDeadline: UInt64 = .max
    private var nextSweep: UInt64
    /// Results waiting for their `notBefore`, and the earliest of their due times (`.max`: none).
    private var held: [Held] = []
    private var nextRelease: UInt64 = .max
    /// True while a loop thread dispatches what `epoll_wait` returned and may keep one request for
    /// itself; false for a worker delivering a result (it queues every request it parses).
    private var mayKeepRequest = false
    /// True while a loop thread dispatches a batch of events: responses are then written after the
    /// whole batch, not one by one between reads (docs/architecture.md §11.7).
    var deferringWrites = false
    /// The connections whose responses wait for the end of the batch.
    var deferredWrites: [Connection] = []
    /// The request the dispatching loop thread keeps, taken before it releases `ownership`.
    private var keptJob: WorkerPool.Job?
    /// Jobs queued since the workers were last woken (see `WorkerPool.submit`).
    var unannouncedJobs = 0

    init(index: Int, context: ServerContext) throws(HTTPServerError) {
        self.index = index
        self.context = context
        self.threadCount = context.configuration.threadsPerEventLoop
        self.nextSweep = MonotonicClock.now() &+ context.timerResolution
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw HTTPServerError.system("epoll_create1") }
        let wake = eventfd(0, csystem_EFD_NONBLOCK_CLOEXEC)
        guard wake >= 0 else {
            let number = errno
            Glibc.close(epoll)
            throw HTTPServerError.system("eventfd", errno: number)
        }
        let wakeEvents = csystem_EPOLLIN | csystem_EPOLLET
        guard csystem_epoll_ctl(epoll, csystem_EPOLL_CTL_ADD, wake, wakeEvents, Self.wakeToken) == 0 else {
            let number = errno
            Glibc.close(wake)
            Glibc.close(epoll)
            throw HTTPServerError.system("epoll_ctl", errno: number)
        }
        self.epollFD = epoll
        self.wakeFD = wake
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(epollFD)
        readBuffer.deallocate()
    }

    /// Makes this loop the one that accepts, handing connections round-robin to `loops` (itself
    /// included). Called before the loop's thread starts.
    func becomeAcceptor(listenFD: Int32, loops: [EventLoop]) throws(HTTPServerError) {
        guard csystem_epoll_ctl(epollFD, csystem_EPOLL_CTL_ADD, listenFD, csystem_EPOLLIN, Self.listenerToken) == 0
        else { throw HTTPServerError.system("epoll_ctl") }
        self.listenFD = listenFD
        self.peers = loops
    }

    /// Watches the process-wide signal eventfd and calls `onSignal` when it fires. Called before the
    /// loop's thread starts.
    func watchShutdownSignals(fd: Int32, onSignal: @escaping @Sendable () -> Void) throws(HTTPServerError) {
        guard csystem_epoll_ctl(epollFD, csystem_EPOLL_CTL_ADD, fd, csystem_EPOLLIN, Self.signalToken) == 0 else {
            throw HTTPServerError.system("epoll_ctl")
        }
        self.signalFD = fd
        self.onShutdownSignal = onSignal
    }

    // MARK: Posting from other threads

    /// A worker's result for request `sequence` of connection `connectionID`. If the loop is asleep
    /// (its `ownership` free), the calling worker delivers it at once, writing the response itself;
    /// otherwise the loop finds it in the mailbox when it has finished what it is doing. A response
    /// with a `notBefore` still ahead goes to the mailbox to be held: the loop delivers it when due,
    /// so the calling thread is free at once and no thread sleeps for it.
    func complete(connectionID: UInt64, sequence: UInt64, response: HTTPResponse) {
        let completion = Completion(connectionID: connectionID, sequence: sequence, response: response)
        if let notBefore = response.notBefore {
            let wait = ContinuousClock.now.duration(to: notBefore)
            if wait > .zero {
                // The monotonic clock is read after the wait was measured, so `due` is never early.
                let held = Held(due: MonotonicClock.now() &+ wait.nanoseconds, completion: completion)
                post { $0.held.append(held) }
                return
            }
        }
        let delivered: Bool? = ownership.withLockIfAvailable {
            guard !finished else { return true }
            let now = MonotonicClock.now()
            // Whatever was posted before came first, a shutdown above all (every response after
            // it says `Connection: close`): apply it before this result, as the loop would.
            if mailbox.withLock({ $0.wakePending }) { processMailbox(now: now) }
            releaseHeld(now: now)
            deliver(completion, now: now)
            announceJobs()
            return true
        }
        if delivered == nil {
            post { $0.completions.append(completion) }
        }
    }

    /// Hands an accepted descriptor to this loop; false if the loop has exited (the caller closes it).
    func adopt(_ accepted: Accepted) -> Bool {
        post { $0.adopted.append(accepted) }
    }

    func requestShutdown() {
        post { $0.shutdownRequested = true }
    }

    @discardableResult
    private func post(_ change: (inout Mailbox) -> Void) -> Bool {
        let needsWake: Bool? = mailbox.withLock { box in
            guard !box.closed else { return nil }
            change(&box)
            defer { box.wakePending = true }
            return !box.wakePending
        }
        guard let needsWake else { return false }
        if needsWake {
            var one: UInt64 = 1
            // EAGAIN would mean the counter is full, i.e. a wake-up is pending anyway.
            _ = Glibc.write(wakeFD, &one, MemoryLayout<UInt64>.size)
        }
        return true
    }

    // MARK: The loop

    /// The body of each of the loop's threads: runs until shutdown has closed every connection.
    func run() {
        let capacity = 256
        var events = [UInt32](repeating: 0, count: capacity)
        var tokens = [UInt64](repeating: 0, count: capacity)
        var timeout = ownership.withLock { sleepTimeout(now: MonotonicClock.now()) }
        while let milliseconds = timeout {
            let count = events.withUnsafeMutableBufferPointer { eventBuffer in
                tokens.withUnsafeMutableBufferPointer { tokenBuffer in
                    csystem_epoll_wait(
                        epollFD,
                        eventBuffer.baseAddress,
                        tokenBuffer.baseAddress,
                        Int32(capacity),
                        milliseconds
                    )
                }
            }
            if count < 0 {
                let number = errno
                precondition(number == EINTR, "epoll_wait failed with errno \(number)")
                timeout = ownership.withLock { sleepTimeout(now: MonotonicClock.now()) }
                continue
            }
            let (kept, next): (WorkerPool.Job?, Int32?) = ownership.withLock {
                guard !finished else { return (nil, nil) }
                // Read under `ownership`, so it is never older than a time another holder stamped on
                // a connection (a worker delivering, the sibling thread); see `Connection.expiry`.
                let now = MonotonicClock.now()
                mayKeepRequest = loopThreadsHandling.load(ordering: .relaxed) < threadCount - 1
                deferringWrites = true
                for slot in 0..<Int(count) {
                    dispatch(token: tokens[slot], events: events[slot], now: now)
                }
                deferringWrites = false
                flushDeferredWrites(now: now)
                mayKeepRequest = false
                releaseHeld(now: now)
                if now >= nextSweep {
                    sweep(now: now)
                    nextSweep = now &+ context.timerResolution
                }
                announceJobs()
                if draining && active.isEmpty { finish() }
                defer { keptJob = nil }
                // With nothing kept, the thread sleeps again straight away: its timeout is known now.
                return (keptJob, keptJob == nil ? sleepTimeout(now: MonotonicClock.now()) : nil)
            }
            timeout = next
            if let kept {
                let response = context.pool.respond(to: kept.request)
                // Counted out before the response is written: the client may send its next request
                // as soon as it has this answer, and the thread that request wakes must find this one
                // free, or it sends the request to a worker.
                loopThreadsHandling.wrappingSubtract(1, ordering: .relaxed)
                complete(connectionID: kept.connectionID, sequence: kept.sequence, response: response)
                timeout = ownership.withLock { sleepTimeout(now: MonotonicClock.now()) }
            }
        }
        // Each thread leaving wakes one still asleep, which finds the loop finished and does the same.
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    /// How long a loop thread may sleep in `epoll_wait` before the next deadline sweep or held
    /// response, or nil once the loop has finished. Rounded up, so a held response is never woken
    /// for early. Called under `ownership`.
    private func sleepTimeout(now: UInt64) -> Int32? {
        guard !finished else { return nil }
        let wake = min(nextSweep, nextRelease)
        return wake > now ? Int32(clamping: (wake - now + 999_999) / 1_000_000) : 0
    }

    /// Keeps `job` for the dispatching loop thread to run once it releases `ownership`, if this is a
    /// loop thread's dispatch, it has kept nothing yet, and another thread of the loop is free to
    /// watch it meanwhile (see the type's comment). False sends the job to the worker pool.
    func keepForThisThread(_ job: WorkerPool.Job) -> Bool {
        guard mayKeepRequest, keptJob == nil else { return false }
        keptJob = job
        loopThreadsHandling.wrappingAdd(1, ordering: .relaxed)
        return true
    }

    /// Wakes workers for the jobs queued since they were last woken (see `WorkerPool.submit`).
    private func announceJobs() {
        if unannouncedJobs > 0 {
            context.pool.wakeWorkers(upTo: unannouncedJobs)
            unannouncedJobs = 0
        }
    }

    private func dispatch(token: UInt64, events: UInt32, now: UInt64) {
        switch token {
        case Self.listenerToken:
            acceptConnections(now: now)
        case Self.wakeToken:
            var value: UInt64 = 0
            _ = Glibc.read(wakeFD, &value, MemoryLayout<UInt64>.size)
            processMailbox(now: now)
        case Self.signalToken:
            var value: UInt64 = 0
            // Level-triggered: another loop thread woken by the same signal finds the count taken.
            guard Glibc.read(signalFD, &value, MemoryLayout<UInt64>.size) == MemoryLayout<UInt64>.size else { return }
            context.report(.shutdownSignalReceived)
            onShutdownSignal?()
        default:
            let fd = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
            guard fd < table.count, let connection = table[fd], connection.id == token else { return }
            handleEvents(events, on: connection, now: now)
        }
    }

    private func processMailbox(now: UInt64) {
        let box = mailbox.withLock { box in
            let taken = box
            box.completions = []
            box.held = []
            box.adopted = []
            box.shutdownRequested = false
            box.wakePending = false
            return taken
        }
        for accepted in box.adopted {
            register(accepted, now: now)
        }
        // Shutdown before completions: a response that arrives in the same batch as the shutdown
        // then says `Connection: close`, as every response after the shutdown does.
        if box.shutdownRequested && !draining {
            beginDrain(now: now)
        }
        for completion in box.completions {
            deliver(completion, now: now)
        }
        for entry in box.held {
            held.append(entry)
            nextRelease = min(nextRelease, entry.due)
        }
        releaseHeld(now: now)
    }

    /// Delivers the held results that are due; the others wait for a later wake-up, which
    /// `sleepTimeout` schedules. Their connections count as busy meanwhile (a response is owed), so
    /// no idle deadline closes them; a connection closed meanwhile drops its result in `deliver`.
    private func releaseHeld(now: UInt64) {
        guard now >= nextRelease else { return }
        var due: [Completion] = []
        var next = UInt64.max
        held.removeAll { entry in
            if entry.due <= now {
                due.append(entry.completion)
                return true
            }
            next = min(next, entry.due)
            return false
        }
        nextRelease = next
        for completion in due {
            deliver(completion, now: now)
        }
    }

    /// Puts a worker's result in its slot and writes whatever is ready. A result for a connection
    /// that has closed since (its id no longer in the table) is dropped.
    private func deliver(_ completion: Completion, now: UInt64) {
        let fd = Int(truncatingIfNeeded: completion.connectionID & 0xFFFF_FFFF)
        guard fd < table.count, let connection = table[fd], connection.id == completion.connectionID,
            let first = connection.pending.first
        else { return }
        let offset = Int(completion.sequence &- first.sequence)
        guard offset >= 0, offset < connection.pending.count else { return }
        connection.pending[offset].response = completion.response
        process(connection, now: now)
    }

    private func finish() {
        finished = true
        held = []
        nextRelease = .max
        let stranded = mailbox.withLock { box in
            box.closed = true
            return box.adopted
        }
        for accepted in stranded {
            discard(accepted)
        }
        if listenFD >= 0 {
            Glibc.close(listenFD)
            listenFD = -1
        }
        // Breaks the acceptor's reference cycle through `peers` (it lists itself).
        peers = []
        onShutdownSignal = nil
    }

    // MARK: Accepting

    private func acceptConnections(now: UInt64) {
        // A bounded batch per wake-up keeps accepting from starving established connections.
        for _ in 0..<64 {
            var address = [UInt8](repeating: 0, count: 16)
            var family: Int32 = 0
            let fd = csystem_accept4_peer(listenFD, &address, &family)
            if fd < 0 {
                let number = errno
                switch number {
                case EAGAIN, EWOULDBLOCK:
                    return
                case EINTR, ECONNABORTED, EPROTO, EPERM:
                    continue
                default:
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM (or anything unexpected): a level-triggered
                    // listener would stay readable and spin, so leave it out of epoll for a while.
                    pauseAccepting(errno: number, now: now)
                    return
                }
            }
            let open = context.openConnections.wrappingAdd(1, ordering: .relaxed).newValue
            guard open <= context.configuration.maxConnections else {
                context.openConnections.wrappingSubtract(1, ordering: .relaxed)
                LoopCounters.increment(counters.refused)
                let id = nextRequestID()
                if !refusingConnections {
                    refusingConnections = true
                    context.report(.connectionLimitReached(limit: context.configuration.maxConnections, requestID: id))
                }
                refuse(fd: fd, with: .connectionLimit, requestID: id)
                continue
            }
            let client = HTTPClientAddress(bytes: Array(address.prefix(family == 4 ? 4 : family == 6 ? 16 : 0)))
            var clientKey: HTTPClientAddress?
            switch context.admit(client) {
            case .admitted(let key):
                clientKey = key
            case .exempt:
                break
            case .refused(let report):
                context.openConnections.wrappingSubtract(1, ordering: .relaxed)
                LoopCounters.increment(counters.refusedPerClient)
                let id = nextRequestID()
                if report, let client {
                    context.report(
                        .clientConnectionLimitReached(
                            limit: context.configuration.maxConnectionsPerClient,
                            client: client,
                            requestID: id
                        )
                    )
                }
                refuse(fd: fd, with: .clientConnectionLimit, requestID: id)
                continue
            }
            refusingConnections = false
            LoopCounters.increment(counters.accepted)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let accepted = Accepted(fd: fd, client: client, clientKey: clientKey)
            let target = peers[nextPeer % peers.count]
            nextPeer &+= 1
            if target === self {
                register(accepted, now: now)
            } else if !target.adopt(accepted) {
                discard(accepted)
            }
        }
    }

    /// Closes an accepted connection that never became a `Connection`, and counts it out.
    private func discard(_ accepted: Accepted) {
        Glibc.close(accepted.fd)
        context.openConnections.wrappingSubtract(1, ordering: .relaxed)
        context.release(clientKey: accepted.clientKey)
    }

    /// Answers a connection refused at a connection limit with a 503 (best effort, never blocking)
    /// and closes it.
    private func refuse(fd: Int32, with problem: HTTPProblem, requestID id: HTTPRequestID) {
        var output: [UInt8] = []
        ResponseEncoder.encode(
            problem.response,
            framing: .init(omitBody: false, close: true, confirmKeepAlive: false, requestID: id),
            date: date.current(),
            into: &output
        )
        _ = output.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, csystem_MSG_NOSIGNAL | Int32(MSG_DONTWAIT)) }
        Glibc.close(fd)
    }

    private func pauseAccepting(errno number: Int32, now: UInt64) {
        _ = csystem_epoll_ctl(epollFD, csystem_EPOLL_CTL_DEL, listenFD, 0, 0)
        acceptPausedUntil = now &+ context.acceptRetryDelay
        context.report(
            .acceptPaused(errno: number, retryAfterMilliseconds: Int(context.acceptRetryDelay / 1_000_000))
        )
    }

    private func register(_ accepted: Accepted, now: UInt64) {
        guard !draining else {
            discard(accepted)
            return
        }
        let fd = accepted.fd
        generation &+= 1
        let id = (generation << 32) | UInt64(UInt32(bitPattern: fd))
        let connection = Connection(
            fd: fd,
            id: id,
            client: accepted.client,
            clientKey: accepted.clientKey,
            denseIndex: active.count,
            limits: context.configuration.limits,
            interest: csystem_EPOLLIN,
            now: now
        )
        guard csystem_epoll_ctl(epollFD, csystem_EPOLL_CTL_ADD, fd, csystem_EPOLLIN | csystem_EPOLLET, id) == 0 else {
            discard(accepted)
            return
        }
        let slot = Int(fd)
        if slot >= table.count {
            table.append(contentsOf: repeatElement(nil, count: max(slot + 1 - table.count, table.count)))
        }
        table[slot] = connection
        active.append(connection)
    }

    // MARK: Time

    /// Enforces every deadline; runs every `timerResolution`.
    private func sweep(now: UInt64) {
        if let until = acceptPausedUntil, now >= until, listenFD >= 0 {
            acceptPausedUntil = nil
            if csystem_epoll_ctl(epollFD, csystem_EPOLL_CTL_ADD, listenFD, csystem_EPOLLIN, Self.listenerToken) == 0 {
                context.report(.acceptResumed)
            } else {
                acceptPausedUntil = now &+ context.acceptRetryDelay
            }
        }
        if draining && now >= drainDeadline && !active.isEmpty {
            context.report(.shutdownTimedOut(openConnections: active.count))
            while let connection = active.last { close(connection) }
            return
        }
        // Backwards, because closing moves the last connection into the closed one's place.
        var position = active.count - 1
        while position >= 0 {
            if position < active.count {
                checkDeadlines(active[position], now: now)
            }
            position -= 1
        }
    }

    private func checkDeadlines(_ connection: Connection, now: UInt64) {
        switch connection.expiry(at: now, context) {
        case nil:
            return
        case .lingerEnded, .writeStalled, .idle:
            close(connection)
        case .silentSinceAccept:
            LoopCounters.increment(counters.closedBeforeFirstByte)
            close(connection)
        case .requestIncomplete:
            LoopCounters.increment(counters.timedOut)
            let seconds = Double(context.requestTimeout) / 1e9
            answerAndClose(connection, with: HTTPProblem.requestTimeout(seconds))
            process(connection, now: now)
        }
    }

    // MARK: Shutdown

    private func beginDrain(now: UInt64) {
        draining = true
        drainDeadline = now &+ context.shutdownTimeout
        if listenFD >= 0 {
            Glibc.close(listenFD)
            listenFD = -1
            acceptPausedUntil = nil
        }
        var position = active.count - 1
        while position >= 0 {
            if position < active.count {
                let connection = active[position]
                if connection.isWaitingForClient && connection.parser.isIdle {
                    close(connection)
                }
            }
            position -= 1
        }
    }

    var isDraining: Bool { draining }

    /// The next request id: the loop's counter, strided by the loop count so that loops never
    /// share a value, through the run's permutation, so that ids are unique and show no order.
    func nextRequestID() -> HTTPRequestID {
        requestCounter &+= 1
        let counter = requestCounter &* UInt64(context.loopCount) &+ UInt64(index)
        return HTTPRequestID(rawValue: context.requestIDs.id(of: counter))
    }

    func currentDate() -> [UInt8] {
        date.current()
    }

    var scratch: UnsafeMutableRawBufferPointer { readBuffer }

    /// Forgets a closed connection; called by `close(_:)` only.
    func forget(_ connection: Connection) {
        table[Int(connection.fd)] = nil
        let index = connection.denseIndex
        let last = active.removeLast()
        if last !== connection {
            active[index] = last
            last.denseIndex = index
        }
    }
}
