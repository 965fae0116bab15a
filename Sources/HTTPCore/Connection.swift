/// One client connection's state.
///
/// Owned by exactly one `EventLoop` and touched only under that loop's `ownership` lock, by the
/// loop's thread or by a worker delivering a result while the loop sleeps (it is deliberately not
/// `Sendable`). Results refer to it only by `id`, which is checked before a result is used.
final class Connection {
    enum Phase {
        /// Reading requests and answering them.
        case open
        /// No further request is read; the connection closes once the queued responses are sent.
        case closingAfterResponses
        /// Writing is shut down after a final response; what the client still sends is read and
        /// dropped until EOF, the deadline or the byte limit, so the client sees the response rather
        /// than a reset caused by unread data.
        case lingering(deadline: UInt64, drained: Int)
    }

    /// A response slot per request, in request order: pipelined requests may finish out of order on
    /// the workers, but responses leave strictly in this order.
    struct PendingResponse {
        let sequence: UInt64
        let requestID: HTTPRequestID
        let omitBody: Bool
        let isHTTP10: Bool
        var keepAlive: Bool
        var response: HTTPResponse?
    }

    let fd: Int32
    /// `generation << 32 | fd`: unique among the loop's connections over time, so a late worker
    /// result or stale epoll event for a closed descriptor number never reaches its successor.
    let id: UInt64
    /// The TCP peer, for per-client limits and logs.
    let client: HTTPClientAddress?
    /// The key this connection is counted under for `maxConnectionsPerClient`; nil when exempt.
    let clientKey: HTTPClientAddress?
    var denseIndex: Int
    var parser: HTTPRequestParser
    var phase = Phase.open
    var pending: [PendingResponse] = []
    var nextSequence: UInt64 = 0
    /// The id a `100 Continue` carried, kept for the final response to the same request.
    var reservedRequestID: HTTPRequestID?
    var output: [UInt8] = []
    var outputOffset = 0
    /// The epoll events currently registered.
    var interest: UInt32
    /// Nothing has been read from the client yet (`Configuration.firstByteTimeout` applies).
    var awaitingFirstByte = true
    /// The client shut down its sending side (read returned 0).
    var peerClosedWrite = false
    /// The last response in `output` ends the connection.
    var closeAfterOutput = false
    /// Start of the total deadline for the request being received: accept time for the first
    /// request, the first byte (or the end of our previous response) for later ones.
    var requestStartedAt: UInt64?
    /// When the connection last became idle between requests.
    var idleSince: UInt64
    /// Queued in the loop's `deferredWrites` for the end of the current dispatch batch.
    var writeDeferred = false
    /// When a write first found the socket buffer full, until the output drains.
    var writeBlockedSince: UInt64?
    /// The descriptor is closed (and may already belong to someone else): never touch `fd` again.
    var isClosed = false

    init(
        fd: Int32,
        id: UInt64,
        client: HTTPClientAddress?,
        clientKey: HTTPClientAddress?,
        denseIndex: Int,
        limits: HTTPRequestParser.Limits,
        interest: UInt32,
        now: UInt64
    ) {
        self.fd = fd
        self.id = id
        self.client = client
        self.clientKey = clientKey
        self.denseIndex = denseIndex
        self.parser = HTTPRequestParser(limits: limits)
        self.interest = interest
        self.requestStartedAt = now
        self.idleSince = now
    }

    var hasUnsentOutput: Bool { outputOffset < output.count }

    var isLingering: Bool {
        if case .lingering = phase { return true }
        return false
    }

    /// Waiting for the client: nothing owed, nothing unsent, still reading requests.
    var isWaitingForClient: Bool {
        if case .open = phase { return pending.isEmpty && !hasUnsentOutput }
        return false
    }

    /// A deadline that has passed, for `EventLoop` to act on.
    enum Expiry: Equatable {
        /// Lingering after a final response is over: close.
        case lingerEnded
        /// The client has not taken its response for `writeTimeout`: close.
        case writeStalled
        /// Connected and silent for `firstByteTimeout`: close without an answer.
        case silentSinceAccept
        /// A request begun and not finished within `requestTimeout`: 408, then close.
        case requestIncomplete
        /// No byte of a next request within `requestTimeout`, or idle for `keepAliveTimeout`: close.
        case idle
    }

    /// The deadline passed at `now`, if any. A timestamp later than `now` counts as no time elapsed:
    /// a thread holding the loop may stamp the connection with a clock read after `now` was.
    func expiry(at now: UInt64, _ context: ServerContext) -> Expiry? {
        func elapsed(since start: UInt64) -> UInt64 { now > start ? now - start : 0 }
        if case .lingering(let deadline, _) = phase { return now >= deadline ? .lingerEnded : nil }
        if let blocked = writeBlockedSince, elapsed(since: blocked) >= context.writeTimeout { return .writeStalled }
        guard isWaitingForClient else { return nil }
        guard let started = requestStartedAt else {
            return elapsed(since: idleSince) >= context.keepAliveTimeout ? .idle : nil
        }
        if awaitingFirstByte && elapsed(since: started) >= context.firstByteTimeout { return .silentSinceAccept }
        guard elapsed(since: started) >= context.requestTimeout else { return nil }
        // Not a byte of a request arrived: nobody is waiting for an answer.
        return parser.isIdle ? .idle : .requestIncomplete
    }
}
