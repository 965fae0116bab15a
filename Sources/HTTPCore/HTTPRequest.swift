/// A complete request as handlers see it: the checked head, the whole body and a server-assigned id.
public struct HTTPRequest: Sendable {
    public var head: HTTPRequestHead
    /// At most `Configuration.limits.maxBodyBytes`, already de-chunked.
    public var body: [UInt8]
    /// Unique per request within a server run; meant for logs and error reports.
    public var id: HTTPRequestID
    /// The TCP peer; `UpgradeAPIHandler` replaces it with the forwarded client when the peer is a
    /// trusted proxy (`TrustedProxies`).
    public var client: HTTPClientAddress?
    /// When the event loop had read the whole request, before it waited for a worker: what a
    /// handler that answers no sooner than a fixed time measures from, so that the wait is inside
    /// that time and cannot add to it.
    public var received: ContinuousClock.Instant

    public init(
        head: HTTPRequestHead,
        body: [UInt8] = [],
        id: HTTPRequestID = HTTPRequestID(rawValue: 0),
        client: HTTPClientAddress? = nil,
        received: ContinuousClock.Instant = .now
    ) {
        self.head = head
        self.body = body
        self.id = id
        self.client = client
        self.received = received
    }

    public var method: String { head.method }
    public var target: String { head.target }
    public var path: Substring { head.path }
    public var query: Substring? { head.query }
    public var headers: HTTPHeaders { head.headers }
    public var version: HTTPVersion { head.version }
}
