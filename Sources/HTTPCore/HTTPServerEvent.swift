/// Something the server reports instead of failing silently. Descriptions are single lines that
/// never contain request bytes.
public enum HTTPServerEvent: Sendable, CustomStringConvertible {
    case listening(address: String)
    /// A handler threw something other than an `HTTPProblem`; the client got a bare 500.
    case handlerFailed(requestID: HTTPRequestID, error: String)
    /// A handler returned a response that cannot be sent as it is; the client got a bare 500.
    case invalidResponse(requestID: HTTPRequestID, reason: String)
    /// accept() failed for lack of descriptors or memory; the listener rests for a while.
    case acceptPaused(errno: Int32, retryAfterMilliseconds: Int)
    case acceptResumed
    /// The server answered a request itself with a problem (malformed, too large, not received in
    /// time, or no worker free) and the handler never saw it; `requestID` is the response's
    /// `X-Request-Id`.
    case requestRejected(requestID: HTTPRequestID, status: Int, slug: String, client: HTTPClientAddress?)
    /// A connection was refused because `maxConnections` are open (reported once per burst, with the
    /// `X-Request-Id` of the first refusal).
    case connectionLimitReached(limit: Int, requestID: HTTPRequestID)
    /// A connection from `client` was refused because its client (the address, or its IPv6 /64)
    /// already has `maxConnectionsPerClient` open. Reported once until that client has no connection
    /// left, with the `X-Request-Id` of the first refusal.
    case clientConnectionLimitReached(limit: Int, client: HTTPClientAddress, requestID: HTTPRequestID)
    case shutdownSignalReceived
    case shutdownStarted
    /// The shutdown timeout passed with requests still in flight; their connections were closed.
    case shutdownTimedOut(openConnections: Int)
    case stopped

    public var description: String {
        switch self {
        case .listening(let address): "listening on \(address)"
        case .handlerFailed(let id, let error): "request \(id): handler failed: \(error)"
        case .invalidResponse(let id, let reason): "request \(id): invalid response: \(reason)"
        case .acceptPaused(let errno, let delay):
            "accept failed (errno \(errno)); not accepting for \(delay) ms (raise RLIMIT_NOFILE or lower maxConnections)"
        case .acceptResumed: "accepting connections again"
        case .requestRejected(let id, let status, let slug, let client):
            "request \(id): answered \(status) \(slug)" + (client.map { " to \($0)" } ?? "")
        case .connectionLimitReached(let limit, let id):
            "request \(id): connection limit \(limit) reached; refusing new connections"
        case .clientConnectionLimitReached(let limit, let client, let id):
            "request \(id): client \(client) has \(limit) connections open, its limit; refusing its new ones"
        case .shutdownSignalReceived: "shutdown signal received"
        case .shutdownStarted: "graceful shutdown started: not accepting, finishing in-flight requests"
        case .shutdownTimedOut(let open): "shutdown timeout passed; closed \(open) connections with requests in flight"
        case .stopped: "stopped"
        }
    }
}
