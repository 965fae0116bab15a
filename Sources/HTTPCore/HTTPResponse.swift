/// What a handler answers. The server adds `Date`, `Content-Length`, `Connection` and `X-Request-Id`
/// (the request's `id`) itself (values a handler sets for them are replaced; `Connection: close`
/// still ends the connection after this response), and omits the body for `HEAD`, 204 and 304.
public struct HTTPResponse: Sendable {
    /// 200 through 599; anything else is replaced by a 500 before it reaches the wire.
    public var status: Int
    /// Field names must be tokens and values must not contain CR, LF or NUL; a response that breaks
    /// this is replaced by a 500 (it would otherwise let a value split the response).
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The earliest moment the response may be written; nil writes it as soon as it is ready. A
    /// response due later is held by its event loop, not by the thread that produced it, and the
    /// connection's later responses wait behind it, in request order. For answers whose timing must
    /// not tell what the handler found (failed credential checks, docs/architecture.md §10.3).
    public var notBefore: ContinuousClock.Instant?

    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON document (`application/json`).
    public static func json(status: Int = 200, _ body: some StringProtocol) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: ["Content-Type": "application/json"],
            body: Array(body.utf8)
        )
    }

    /// Plain UTF-8 text.
    public static func text(status: Int = 200, _ body: some StringProtocol) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: Array(body.utf8)
        )
    }
}
