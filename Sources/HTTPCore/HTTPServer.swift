import CSystem
import Glibc
import Synchronization

/// A strict HTTP/1.1 server for hostile networks: epoll event loops (one per core) own the
/// connections and parse with `HTTPRequestParser`; a bounded pool of worker threads runs the
/// `HTTPHandler`, so a slow handler (a password hash) never stalls other connections.
///
/// ```swift
/// var configuration = HTTPServer.Configuration()
/// configuration.port = 8080
/// configuration.shutdownSignals = [SIGTERM, SIGINT]
/// let server = HTTPServer(configuration: configuration, handler: MyRouter())
/// try server.run()  // start, then block until a signal (or `shutdown()`) has drained it
/// ```
///
/// Threads: `threadsPerEventLoop` per event loop (`http-loop-N`, `http-loop-N.M`), `workerCount`
/// workers (`http-worker-N`). Loop 0 also accepts and hands new connections to the loops round-robin.
/// Handlers run on the workers; with more than one thread per loop, a loop thread woken by a request
/// may run it itself while another stays in `epoll_wait` (see `Configuration.threadsPerEventLoop`).
/// Call `shutdown()` and `wait()` before dropping a started server: its threads keep running until
/// then.
public final class HTTPServer: Sendable {
    public let configuration: Configuration
    private let handler: any HTTPHandler
    private let state = Locked(State.idle)
    private let boundPort = Atomic<Int>(0)

    private enum State: Sendable {
        case idle
        case running(Running)
        case stopping(Running)
        case stopped
    }

    private struct Running: Sendable {
        let loops: [EventLoop]
        let pool: WorkerPool
        let threads: [SystemThread]
        var joinClaimed = false
    }

    public init(configuration: Configuration = Configuration(), handler: some HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// The bound port (the one picked by the system when `configuration.port` is 0); 0 before `start`.
    public var port: Int {
        boundPort.load(ordering: .acquiring)
    }

    /// Binds, starts the threads and returns. Throws if the configuration is invalid, the address is
    /// taken (including by a stale copy of this server), or a system resource is missing.
    public func start() throws(HTTPServerError) {
        if let failure = configuration.validationFailure() {
            throw HTTPServerError(.invalidConfiguration, failure)
        }
        try state.withLock { (state: inout State) throws(HTTPServerError) in
            guard case .idle = state else { throw HTTPServerError(.alreadyStarted, "start() may be called once") }
            let running = try launch()
            state = .running(running)
        }
        configuration.onEvent(.listening(address: "\(configuration.host):\(port)"))
    }

    /// Starts the server and blocks until it has shut down.
    public func run() throws(HTTPServerError) {
        try start()
        wait()
    }

    /// Begins a graceful shutdown and returns at once: stop accepting, close idle connections, let
    /// in-flight requests finish and be answered (with `Connection: close`), then stop the threads.
    /// After `shutdownTimeout`, what is left is closed. Safe to call from any thread, more than once.
    public func shutdown() {
        let loops = state.withLock { (state: inout State) -> [EventLoop] in
            switch state {
            case .idle:
                state = .stopped
                return []
            case .running(let running):
                state = .stopping(running)
                return running.loops
            case .stopping, .stopped:
                return []
            }
        }
        guard !loops.isEmpty else { return }
        configuration.onEvent(.shutdownStarted)
        for loop in loops { loop.requestShutdown() }
    }

    /// Blocks until the server has stopped: every loop has closed its connections and every worker
    /// has finished. Returns at once if the server never started.
    public func wait() {
        let claimed = state.withLock { (state: inout State) -> Running? in
            switch state {
            case .running(var running) where !running.joinClaimed:
                running.joinClaimed = true
                state = .running(running)
                return running
            case .stopping(var running) where !running.joinClaimed:
                running.joinClaimed = true
                state = .stopping(running)
                return running
            default:
                return nil
            }
        }
        guard let running = claimed else {
            // Another caller is joining the threads; wait for it to report the end.
            while !isStopped { usleep(10_000) }
            return
        }
        for thread in running.threads { thread.join() }
        // Loops are gone, so nothing submits any more; workers finish what is queued and exit.
        running.pool.stopAndJoin()
        for signal in configuration.shutdownSignals {
            _ = csystem_restore_default_signal(signal)
        }
        state.withLock { $0 = .stopped }
        configuration.onEvent(.stopped)
    }

    private var isStopped: Bool {
        state.withLock { state in
            if case .stopped = state { return true }
            return false
        }
    }

    /// Counters since start (zero before).
    public var statistics: Statistics {
        let running = state.withLock { (state: inout State) -> Running? in
            switch state {
            case .running(let running), .stopping(let running): running
            case .idle, .stopped: nil
            }
        }
        var statistics = Statistics()
        guard let running else { return statistics }
        for loop in running.loops {
            let counters = loop.counters
            statistics.connectionsAccepted += counters.accepted.load(ordering: .relaxed)
            statistics.connectionsRefused += counters.refused.load(ordering: .relaxed)
            statistics.connectionsRefusedPerClient += counters.refusedPerClient.load(ordering: .relaxed)
            statistics.requestsReceived += counters.requests.load(ordering: .relaxed)
            statistics.requestsRefusedBusy += counters.busy.load(ordering: .relaxed)
            statistics.requestsHandledByLoopThreads += counters.handledByLoopThreads.load(ordering: .relaxed)
            statistics.requestsMalformed += counters.malformed.load(ordering: .relaxed)
            statistics.requestsTimedOut += counters.timedOut.load(ordering: .relaxed)
            statistics.connectionsClosedBeforeFirstByte += counters.closedBeforeFirstByte.load(ordering: .relaxed)
            statistics.bytesRead += counters.bytesRead.load(ordering: .relaxed)
        }
        statistics.connectionsOpen = running.loops.first?.context.openConnections.load(ordering: .relaxed) ?? 0
        statistics.queuedRequests = running.pool.queuedCount
        statistics.oldestQueuedWait = .nanoseconds(Int64(clamping: running.pool.oldestQueuedWait))
        statistics.requestsDequeued = running.pool.dequeued.load(ordering: .relaxed)
        statistics.queueWaitTotal = .nanoseconds(running.pool.queueWaitTotal.load(ordering: .relaxed))
        statistics.queueWaitMaximum = .nanoseconds(running.pool.queueWaitMaximum.load(ordering: .relaxed))
        return statistics
    }

    /// Creates the socket, loops and threads. On failure, releases whatever was created.
    private func launch() throws(HTTPServerError) -> Running {
        let listener = try ListeningSocket.open(
            host: configuration.host,
            port: configuration.port,
            backlog: configuration.listenBacklog
        )
        var listenerOwnedByLoop = false
        defer { if !listenerOwnedByLoop { Glibc.close(listener.fd) } }

        let pool = WorkerPool(
            handler: handler,
            queueCapacity: configuration.effectiveWorkerQueueCapacity,
            maxQueueDelay: configuration.maxQueueDelay,
            onEvent: configuration.onEvent
        )
        let context = ServerContext(
            configuration: configuration,
            handler: handler,
            pool: pool,
            requestIDs: .random()
        )
        var loops: [EventLoop] = []
        for index in 0..<configuration.eventLoopCount {
            loops.append(try EventLoop(index: index, context: context))
        }
        try loops[0].becomeAcceptor(listenFD: listener.fd, loops: loops)
        do {
            try installSignalForwarding(on: loops[0])
            try pool.start(workerCount: configuration.workerCount)
        } catch {
            pool.stopAndJoin()
            for signal in configuration.shutdownSignals { _ = csystem_restore_default_signal(signal) }
            throw error
        }

        var threads: [SystemThread] = []
        for loop in loops {
            for member in 0..<configuration.threadsPerEventLoop {
                let name = member == 0 ? "http-loop-\(loop.index)" : "http-loop-\(loop.index).\(member)"
                do {
                    threads.append(try SystemThread.spawn(name: name) { loop.run() })
                    listenerOwnedByLoop = true
                } catch {
                    // A loop without a thread never runs; the started ones drain their (empty) loops.
                    for started in loops { started.requestShutdown() }
                    for thread in threads { thread.join() }
                    pool.stopAndJoin()
                    for signal in configuration.shutdownSignals { _ = csystem_restore_default_signal(signal) }
                    throw error
                }
            }
        }
        boundPort.store(listener.port, ordering: .releasing)
        return Running(loops: loops, pool: pool, threads: threads)
    }

    /// Signals are forwarded (by an async-signal-safe C handler) to a process-wide eventfd that loop 0
    /// watches. A self-pipe rather than signalfd: signalfd needs the signals blocked in every thread,
    /// including threads the runtime started before us, which cannot be guaranteed.
    private func installSignalForwarding(on loop: EventLoop) throws(HTTPServerError) {
        guard !configuration.shutdownSignals.isEmpty else { return }
        let signalFD = csystem_shutdown_signal_fd()
        guard signalFD >= 0 else { throw HTTPServerError.system("eventfd for shutdown signals") }
        var stale: UInt64 = 0
        _ = Glibc.read(signalFD, &stale, MemoryLayout<UInt64>.size)
        try loop.watchShutdownSignals(fd: signalFD) { [weak self] in self?.shutdown() }
        for signal in configuration.shutdownSignals where csystem_forward_signal_to_shutdown_fd(signal) != 0 {
            throw HTTPServerError.system("sigaction(\(signal))")
        }
    }
}
