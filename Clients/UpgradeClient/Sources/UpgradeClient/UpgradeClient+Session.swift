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
/// One request as a completion-handler task, for the Foundation of Linux and Windows: there,
/// `URLSession.data(for:)` can stop the process ("a task that is not in the registry") when the
/// calling task is cancelled as the answer arrives. A cancelled data task reports `cancelled` once.
private final class SessionRequest: @unchecked Sendable {
    private let session: URLSession
    private let request: URLRequest
    private let lock = NSLock()
    // Guarded by `lock`.
    private var task: URLSessionDataTask?
    private var cancelled = false

    init(_ session: URLSession, _ request: URLRequest) {
        self.session = session
        self.request = request
    }

    func run() async throws -> (Data, URLResponse) {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let data, let response {
                        continuation.resume(returning: (data, response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                let cancelled = lock.withLock {
                    self.task = task
                    return self.cancelled
                }
                task.resume()
                if cancelled { task.cancel() }
            }
        } onCancel: {
            let task = lock.withLock {
                cancelled = true
                return self.task
            }
            task?.cancel()
        }
    }
}
#endif
