import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension UpgradeClient {
    /// The transport `init(baseURL:session:retryPolicy:)` uses: one request on `session`, cancelled
    /// with the calling task.
    public static func transport(_ session: URLSession) -> Transport {
        #if canImport(FoundationNetworking)
        { request in try await SessionRequest(session, request).run() }
        #else
        { request in try await session.data(for: request) }
        #endif
    }
}

#if canImport(FoundationNetworking)
/// One request as a completion-handler task, for the Foundation of Linux and Windows, where
/// cancelling a `URLSessionTask` (which `data(for:)` does when the calling task is cancelled) can
/// stop the process ("a task that is not in the registry") if the answer arrives meanwhile. A
/// cancelled call here ends at once with `CancellationError` and leaves the request to finish
/// unheard: the answer the server gives is discarded, as a cancelled `data(for:)`'s would be.
private final class SessionRequest: @unchecked Sendable {
    private let session: URLSession
    private let request: URLRequest
    private let lock = NSLock()
    // Guarded by `lock`: whoever ends the call first (the answer or the cancel) takes it.
    private var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
    private var cancelled = false

    init(_ session: URLSession, _ request: URLRequest) {
        self.session = session
        self.request = request
    }

    func run() async throws -> (Data, URLResponse) {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let proceed = lock.withLock {
                    self.continuation = continuation
                    return !cancelled
                }
                guard proceed else { return finish(.failure(CancellationError())) }
                session.dataTask(with: request) { data, response, error in
                    if let error {
                        self.finish(.failure(error))
                    } else if let data, let response {
                        self.finish(.success((data, response)))
                    } else {
                        self.finish(.failure(URLError(.badServerResponse)))
                    }
                }.resume()
            }
        } onCancel: {
            lock.withLock { cancelled = true }
            finish(.failure(CancellationError()))
        }
    }

    private func finish(_ result: Result<(Data, URLResponse), any Error>) {
        let continuation = lock.withLock {
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(with: result)
    }
}
#endif
