import Synchronization

/// What every event loop of one server shares: settings (converted once to nanoseconds), the
/// handler, the worker pool and the connection count behind the connection cap.
final class ServerContext: Sendable {
    let configuration: HTTPServer.Configuration
    let handler: any HTTPHandler
    let pool: WorkerPool
    let loopCount: Int
    /// Connections open across all loops; the acceptor reserves a slot before handing one off.
    let openConnections = Atomic<Int>(0)
    /// Random start of this run's request ids.
    let requestIDBase: UInt64

    let firstByteTimeout: UInt64
    let requestTimeout: UInt64
    let keepAliveTimeout: UInt64
    let writeTimeout: UInt64
    let lingerTimeout: UInt64
    let shutdownTimeout: UInt64
    let timerResolution: UInt64
    let acceptRetryDelay: UInt64

    init(
        configuration: HTTPServer.Configuration,
        handler: any HTTPHandler,
        pool: WorkerPool,
        requestIDBase: UInt64
    ) {
        self.configuration = configuration
        self.handler = handler
        self.pool = pool
        self.loopCount = configuration.eventLoopCount
        self.requestIDBase = requestIDBase
        self.firstByteTimeout = configuration.firstByteTimeout.nanoseconds
        self.requestTimeout = configuration.requestTimeout.nanoseconds
        self.keepAliveTimeout = configuration.keepAliveTimeout.nanoseconds
        self.writeTimeout = configuration.writeTimeout.nanoseconds
        self.lingerTimeout = configuration.lingerTimeout.nanoseconds
        self.shutdownTimeout = configuration.shutdownTimeout.nanoseconds
        self.timerResolution = max(1_000_000, configuration.timerResolution.nanoseconds)
        self.acceptRetryDelay = configuration.acceptRetryDelay.nanoseconds
    }

    func report(_ event: HTTPServerEvent) {
        configuration.onEvent(event)
    }
}
