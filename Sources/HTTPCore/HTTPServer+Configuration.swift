import Glibc

extension HTTPServer {
    /// Every limit and timeout of the server in one place, with defaults meant for exposure to
    /// hostile clients behind a TLS-terminating proxy.
    public struct Configuration: Sendable {
        /// A numeric IPv4 or IPv6 address to listen on.
        public var host: String = "127.0.0.1"
        /// 0 picks a free port (read it back from `HTTPServer.port`).
        public var port: Int = 8080
        /// Event loop threads; each owns its connections. One per core by default.
        public var eventLoopCount: Int = HTTPServer.Configuration.coreCount
        /// Threads waiting on each event loop's epoll instance. With one (the default) the loop's
        /// thread reads, writes and enforces deadlines, and every handler runs on a worker. With two or
        /// more, the thread a request wakes runs its handler itself while another stays on watch: a
        /// quiet server then wakes one thread per request instead of two, a small saving beside the
        /// password hash, but at saturation the loop's threads take turns at its lock and throughput
        /// drops (measured in `Benchmarks/README.md`).
        /// What holds with any count:
        /// - a loop's connections are touched only under its ownership lock: by one of its threads, or
        ///   by a worker writing its response while the loop sleeps;
        /// - connections are edge-triggered, so an event wakes one thread of the loop;
        /// - a thread runs a handler only while another thread of its loop does not, so each loop
        ///   always has a thread in `epoll_wait`, and it counts itself out before that handler's
        ///   response is written (the client's next request must find it free);
        /// - timestamps on a connection come from clocks read under the ownership lock.
        public var threadsPerEventLoop: Int = 1
        /// Threads that run `HTTPHandler.handle`; handlers may block, so twice the cores by default.
        public var workerCount: Int = max(2, HTTPServer.Configuration.coreCount * 2)
        /// How long the oldest request waiting for a worker may have waited: while it has waited
        /// longer, a new request is answered `503 server-busy` with `Retry-After: 1` instead of
        /// queued (docs/architecture.md §11.6). Shedding by delay, not by count: a burst waits as long
        /// as it is drained within this bound, however many requests it holds
        /// (`UPGRADE_MAX_QUEUE_DELAY_MS` in `serve`).
        public var maxQueueDelay: Duration = .milliseconds(500)
        /// A memory cap on requests waiting for a worker; one more is answered 503 like a delay past
        /// `maxQueueDelay`. Nil (the default): `maxConnections × maxPipelinedRequests`, as many as
        /// the open connections can have pending, so only the delay refuses.
        public var workerQueueCapacity: Int? = nil
        /// Open connections across all loops; a connection beyond it gets a 503 and is closed.
        public var maxConnections: Int = 1024
        /// Open connections from one client, so that one client cannot fill `maxConnections` and take
        /// the server offline; one more gets a 503 (`client-connection-limit`) and is closed. A client
        /// is the TCP peer's IPv4 address, or its IPv6 /64 (one IPv6 host is usually handed a whole
        /// /64 and can pick any address in it), as for the per-client throttle. 64 is a sixteenth of
        /// the default cap: a browser opens at most 6 connections to a host and an app one or two,
        /// so a NAT with a few dozen busy users fits, while filling the table takes 16 addresses.
        public var maxConnectionsPerClient: Int = 64
        /// TCP peers not held to `maxConnectionsPerClient`: reverse proxies, whose one address carries
        /// many clients (`UPGRADE_TRUSTED_PROXIES` in `serve`). They still count toward `maxConnections`.
        public var connectionLimitExemptPeers: TrustedProxies = .none
        /// Head size (431), header field count (431) and body size (413).
        public var limits = HTTPRequestParser.Limits()
        /// From accept until the connection's first byte. A connection that sends nothing by then is
        /// closed without an answer (nobody is waiting for one, and a 408 could be read as the answer
        /// to a request the client is just sending), so idle connections opened in bulk hold their
        /// slots for this long rather than the whole `requestTimeout`.
        public var firstByteTimeout: Duration = .seconds(5)
        /// From the first byte of a request (or from accept, for the first request) until it is fully
        /// read; then 408 and close. A total deadline, so trickling bytes cannot extend it.
        public var requestTimeout: Duration = .seconds(10)
        /// How long a connection may sit idle between requests before it is closed.
        public var keepAliveTimeout: Duration = .seconds(15)
        /// How long a response may stay unsent because the client does not read.
        public var writeTimeout: Duration = .seconds(10)
        /// After an error response the server stops writing and reads (and drops) what the client
        /// still sends for this long or this many bytes, so the client reads the error instead of a reset.
        public var lingerTimeout: Duration = .seconds(2)
        public var lingerMaxBytes: Int = 256 * 1024
        /// Graceful shutdown waits this long for in-flight requests before closing everything.
        public var shutdownTimeout: Duration = .seconds(30)
        /// Requests of one connection being handled at once; the connection is not read beyond it.
        public var maxPipelinedRequests: Int = 16
        /// Granularity of every timeout above: each loop checks its deadlines this often.
        public var timerResolution: Duration = .milliseconds(100)
        /// When accept fails for lack of descriptors or memory, the listener is left out of epoll this
        /// long instead of being retried in a busy loop.
        public var acceptRetryDelay: Duration = .milliseconds(250)
        public var listenBacklog: Int = 1024
        /// Signals that start a graceful shutdown (e.g. `[SIGTERM, SIGINT]`); empty installs nothing.
        /// Only one running server in a process can own them.
        public var shutdownSignals: [Int32] = []
        /// Receives what the server has to report (failed handlers, paused accepts, signals).
        /// The default writes one line per event to standard error.
        public var onEvent: @Sendable (HTTPServerEvent) -> Void = HTTPServer.Configuration.logToStandardError

        public init() {}

        /// `workerQueueCapacity`, or the most requests the connections can have pending.
        var effectiveWorkerQueueCapacity: Int {
            if let workerQueueCapacity { return workerQueueCapacity }
            let (product, overflow) = maxConnections.multipliedReportingOverflow(by: maxPipelinedRequests)
            return overflow ? Int.max : product
        }

        static var coreCount: Int {
            max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        }

        @Sendable static func logToStandardError(_ event: HTTPServerEvent) {
            // One write(2) per line, so lines from different threads do not interleave.
            var line = Array("http-server: \(event)\n".utf8)
            _ = line.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }

        /// The first setting that makes no sense, described, or nil.
        func validationFailure() -> String? {
            if !(0...65535).contains(port) { return "port must be 0...65535, got \(port)" }
            if eventLoopCount < 1 { return "eventLoopCount must be at least 1" }
            if !(1...16).contains(threadsPerEventLoop) { return "threadsPerEventLoop must be 1...16" }
            if workerCount < 1 { return "workerCount must be at least 1" }
            if let capacity = workerQueueCapacity, capacity < 1 { return "workerQueueCapacity must be at least 1" }
            if maxConnections < 1 { return "maxConnections must be at least 1" }
            if maxConnectionsPerClient < 1 { return "maxConnectionsPerClient must be at least 1" }
            if maxPipelinedRequests < 1 { return "maxPipelinedRequests must be at least 1" }
            if lingerMaxBytes < 0 { return "lingerMaxBytes must not be negative" }
            if listenBacklog < 1 { return "listenBacklog must be at least 1" }
            let durations: [(String, Duration)] = [
                ("firstByteTimeout", firstByteTimeout), ("requestTimeout", requestTimeout),
                ("keepAliveTimeout", keepAliveTimeout),
                ("writeTimeout", writeTimeout), ("lingerTimeout", lingerTimeout),
                ("shutdownTimeout", shutdownTimeout), ("timerResolution", timerResolution),
                ("acceptRetryDelay", acceptRetryDelay), ("maxQueueDelay", maxQueueDelay),
            ]
            for (name, value) in durations where value <= .zero {
                return "\(name) must be positive"
            }
            return nil
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating, for arithmetic on monotonic timestamps.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max : whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
