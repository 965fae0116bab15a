/// Answers requests. The server is agnostic of routing: a router is one `HTTPHandler`.
public protocol HTTPHandler: Sendable {
    /// Answers `request` on a worker thread of the bounded pool. It may block for as long as a password
    /// hash or a database transaction takes, since a worker is a dedicated thread, not an event loop;
    /// async work can be awaited by blocking the worker on its result.
    /// A thrown `HTTPProblem` is sent as it is; any other error becomes a bare 500 and is reported
    /// through `Configuration.onEvent`, never echoed to the client.
    func handle(_ request: HTTPRequest) throws -> HTTPResponse

    /// Called under the event loop's ownership before a request is queued for a worker (on the loop's
    /// thread, or on a worker delivering a pipelined request's predecessor). Return a response
    /// only for constant-time, non-blocking work (liveness checks, cached documents): it is answered
    /// without a thread hop and even when the worker queue is full. Returning nil queues the request.
    func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse?
}

extension HTTPHandler {
    public func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        nil
    }
}
