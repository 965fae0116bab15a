import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects each task's answer for `AppleClientTransport`, enforcing the size bound as bytes
/// arrive and refusing redirects, then resumes the waiting caller exactly once.
///
/// `@unchecked Sendable` because `NSObject` is not `Sendable`; the invariant that makes it safe:
/// the only stored properties are `pending` and `cancelledEarly`, both `Mutex`es, and every
/// callback reads and writes task state only inside them.
final class AppleClientSessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    typealias Outcome = Result<AppleClientTransport.Response, AppleClientTransport.Failure>

    private struct Pending {
        let continuation: CheckedContinuation<Outcome, Never>
        let limit: Int
        let timeout: Duration
        var body: [UInt8] = []
        /// Why the task was cancelled from our side, if it was.
        var failure: AppleClientTransport.Failure?
    }

    private let pending = Mutex<[Int: Pending]>([:])
    /// Tasks whose caller was cancelled before they were registered (and so before they started).
    private let cancelledEarly = Mutex<Set<Int>>([])

    /// Makes `continuation` the receiver of the task's outcome. False if the caller was cancelled
    /// already: the continuation has then been resumed with `.cancelled` and the task must not start.
    func register(
        _ identifier: Int,
        limit: Int,
        timeout: Duration,
        continuation: CheckedContinuation<Outcome, Never>
    ) -> Bool {
        let proceed = cancelledEarly.withLock { cancelled in
            guard cancelled.remove(identifier) == nil else { return false }
            pending.withLock { $0[identifier] = Pending(continuation: continuation, limit: limit, timeout: timeout) }
            return true
        }
        if !proceed { continuation.resume(returning: .failure(.cancelled)) }
        return proceed
    }

    /// The caller was cancelled; true if the task is running and must be cancelled. A task not yet
    /// registered is remembered instead, so it never starts (a task cancelled before it is resumed
    /// might never report completion, leaving its caller waiting).
    func cancel(_ identifier: Int) -> Bool {
        cancelledEarly.withLock { cancelled in
            let running = pending.withLock { pending -> Bool in
                guard pending[identifier] != nil else { return false }
                if pending[identifier]?.failure == nil { pending[identifier]?.failure = .cancelled }
                return true
            }
            if !running { cancelled.insert(identifier) }
            return running
        }
    }

    /// Records that the deadline passed; true if the task was still running and must be cancelled.
    func markTimedOut(_ identifier: Int) -> Bool {
        pending.withLock { pending in
            guard let timeout = pending[identifier]?.timeout, pending[identifier]?.failure == nil else { return false }
            pending[identifier]?.failure = .timedOut(timeout)
            return true
        }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let tooLarge = pending.withLock { pending in
            guard let limit = pending[dataTask.taskIdentifier]?.limit else { return false }
            guard response.expectedContentLength > Int64(limit) else { return false }
            pending[dataTask.taskIdentifier]?.failure = .tooLarge(limit: limit)
            return true
        }
        completionHandler(tooLarge ? .cancel : .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let identifier = dataTask.taskIdentifier
        let overflow = pending.withLock { pending in
            // Read fields, not the entry: a copy of the entry would make the append copy the body.
            guard let limit = pending[identifier]?.limit, let received = pending[identifier]?.body.count,
                pending[identifier]?.failure == nil
            else { return false }
            guard received + data.count <= limit else {
                pending[identifier]?.failure = .tooLarge(limit: limit)
                pending[identifier]?.body = []
                return true
            }
            pending[identifier]?.body.append(contentsOf: data)
            return false
        }
        if overflow { dataTask.cancel() }
    }

    /// Redirects are answered with nil: the 3xx itself becomes the response, which the client refuses.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        entry.continuation.resume(returning: Self.outcome(entry, response: task.response, error: error))
    }

    private static func outcome(_ entry: Pending, response: URLResponse?, error: (any Error)?) -> Outcome {
        if let failure = entry.failure { return .failure(failure) }
        if let error {
            return .failure(failure(for: error, timeout: entry.timeout))
        }
        guard let http = response as? HTTPURLResponse else {
            return .failure(.transport("the answer is not HTTP"))
        }
        if (300...399).contains(http.statusCode) { return .failure(.redirected(status: http.statusCode)) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return .success(AppleClientTransport.Response(status: http.statusCode, headers: headers, body: entry.body))
    }

    /// URLSession's errors, sorted into what may heal by retrying and what will not. The
    /// descriptions carry the error code, not the URL.
    private static func failure(for error: any Error, timeout: Duration) -> AppleClientTransport.Failure {
        guard let urlError = error as? URLError else {
            return .transport("\(type(of: error))")
        }
        let code = "URLError \(urlError.code.rawValue)"
        switch urlError.code {
        case .timedOut:
            return .timedOut(timeout)
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
            return .cannotConnect(code)
        case .cancelled:
            return .cancelled
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            return .insecureConnection(code)
        default:
            return .transport(code)
        }
    }
}
