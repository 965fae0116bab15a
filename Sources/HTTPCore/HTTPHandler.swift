/// Answers requests. The server is agnostic of routing: a router is one `HTTPHandler`.
public protocol HTTPHandler: Sendable {
    /// Answers `request` on a thread that may block: a worker of the bounded pool, or the event loop
    /// thread that read the request while another thread of its loop watches the connections (see
    /// `HTTPServer.Configuration.threadsPerEventLoop`). It may block for as long as a password hash
    /// or a database transaction takes; async work can be awaited by blocking the thread on its result.
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
