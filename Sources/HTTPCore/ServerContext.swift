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
    /// This run's request ids: a random permutation of the loops' counters.
    let requestIDs: RequestIDPermutation
    /// Open connections per client key (`HTTPClientAddress.throttleKey`) of peers held to
    /// `maxConnectionsPerClient`. The acceptor counts a connection in, whichever loop closes it
    /// counts it out; an entry goes when its count reaches zero, so there are never more entries
    /// than open connections.
    private let clientConnections = Locked<[HTTPClientAddress: ClientConnections]>([:])

    private struct ClientConnections: Sendable {
        var open: Int
        /// A refusal was reported since the client last had no connection: one event per client
        /// until then, however fast it reconnects.
        var refusalReported: Bool
    }

    enum ClientAdmission {
        /// Counted under `key`; release it when the connection closes.
        case admitted(key: HTTPClientAddress)
        /// Not held to the limit (an exempt peer, or no address).
        case exempt
        /// At its limit; `report` is true for the first refusal of a burst.
        case refused(report: Bool)
    }

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
        requestIDs: RequestIDPermutation
    ) {
        self.configuration = configuration
        self.handler = handler
        self.pool = pool
        self.loopCount = configuration.eventLoopCount
        self.requestIDs = requestIDs
        self.firstByteTimeout = configuration.firstByteTimeout.nanoseconds
        self.requestTimeout = configuration.requestTimeout.nanoseconds
        self.keepAliveTimeout = configuration.keepAliveTimeout.nanoseconds
        self.writeTimeout = configuration.writeTimeout.nanoseconds
        self.lingerTimeout = configuration.lingerTimeout.nanoseconds
        self.shutdownTimeout = configuration.shutdownTimeout.nanoseconds
        self.timerResolution = max(1_000_000, configuration.timerResolution.nanoseconds)
        self.acceptRetryDelay = configuration.acceptRetryDelay.nanoseconds
    }

    /// Counts a new connection from `peer` against `maxConnectionsPerClient`.
    func admit(_ peer: HTTPClientAddress?) -> ClientAdmission {
        guard let peer, !configuration.connectionLimitExemptPeers.trusts(peer) else { return .exempt }
        let key = peer.throttleKey
        let limit = configuration.maxConnectionsPerClient
        return clientConnections.withLock { table in
            var entry = table[key] ?? ClientConnections(open: 0, refusalReported: false)
            guard entry.open < limit else {
                let report = !entry.refusalReported
                entry.refusalReported = true
                table[key] = entry
                return .refused(report: report)
            }
            entry.open += 1
            table[key] = entry
            return .admitted(key: key)
        }
    }

    /// Counts out a connection `admit` counted under `key`.
    func release(clientKey key: HTTPClientAddress?) {
        guard let key else { return }
        clientConnections.withLock { table in
            guard var entry = table[key] else { return }
            entry.open -= 1
            table[key] = entry.open > 0 ? entry : nil
        }
    }

    func report(_ event: HTTPServerEvent) {
        configuration.onEvent(event)
    }
}
