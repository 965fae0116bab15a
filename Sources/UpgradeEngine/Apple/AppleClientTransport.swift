import Dispatch
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange with Apple over `URLSession`, bounded in time and size, with redirects
/// refused (a redirected POST would carry the client secret to another URL). It does not retry;
/// `AppleClient` decides that from the outcome.
final class AppleClientTransport: Sendable {
    struct Response: Sendable {
        let status: Int
        /// Field names lower-cased; the last value wins (only single-valued fields are read).
        let headers: [String: String]
        let body: [UInt8]
    }

    enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No connection could be made (refused, unreachable, name not resolved).
        case cannotConnect(String)
        /// The connection broke or the answer was not valid HTTP.
        case transport(String)
        case timedOut(Duration)
        /// TLS failed: an untrusted or expired certificate does not heal by retrying.
        case insecureConnection(String)
        case tooLarge(limit: Int)
        case redirected(status: Int)
        case cancelled

        var isRetryable: Bool {
            switch self {
            case .cannotConnect, .transport, .timedOut: true
            case .insecureConnection, .tooLarge, .redirected, .cancelled: false
            }
        }

        var description: String {
            switch self {
            case .cannotConnect(let why): "could not connect (\(why))"
            case .transport(let why): "the connection failed (\(why))"
            case .timedOut(let limit): "no complete answer within \(limit.seconds) s"
            case .insecureConnection(let why): "the TLS connection could not be trusted (\(why))"
            case .tooLarge(let limit): "the answer is larger than \(limit) bytes"
            case .redirected(let status): "answered a redirect (HTTP \(status)), which is not followed"
            case .cancelled: "the call was cancelled"
            }
        }
    }

    private let session: URLSession
    private let delegate: AppleClientSessionDelegate

    init(connectTimeout: Duration, requestTimeout: Duration) {
        let configuration = URLSessionConfiguration.ephemeral
        // Nothing of Apple's answers may be stored or replayed: no cookies, no cache.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // URLSession's request timeout is an inactivity timer that also covers connecting; the
        // total per attempt is enforced by `send` (and by the resource timeout as a backstop).
        configuration.timeoutIntervalForRequest = connectTimeout.seconds
        configuration.timeoutIntervalForResource = requestTimeout.seconds + 1
        delegate = AppleClientSessionDelegate()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "apple-client"
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Sends `request` and collects the answer, failing once the body passes `limit` bytes or the
    /// exchange takes longer than `timeout`. Cancelling the calling task cancels the exchange.
    func send(_ request: URLRequest, limit: Int, timeout: Duration) async -> Result<Response, Failure> {
        let task = session.dataTask(with: request)
        let identifier = task.taskIdentifier
        let delegate = self.delegate
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Response, Failure>, Never>) in
                guard delegate.register(identifier, limit: limit, timeout: timeout, continuation: continuation) else {
                    return
                }
                task.resume()
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) {
                    if delegate.markTimedOut(identifier) { task.cancel() }
                }
            }
        } onCancel: {
            if delegate.cancel(identifier) { task.cancel() }
        }
    }
}

extension Duration {
    /// The duration in (fractional) seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
