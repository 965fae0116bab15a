import Foundation
import Synchronization
import UpgradeClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport to the real server that records every request and, for the requests named, first
/// plays a failure: an answer lost after the server acted, a `503`, `upgrade-in-progress`, another
/// problem document, or no connection at all.
final class FaultyTransport: Sendable {
    enum Fault: Sendable {
        /// The server acts on the request; its answer never arrives (the connection broke).
        case loseAnswer
        /// `503 server-busy`, as the HTTP server sends it with a full queue; nothing reaches the API.
        case busy(retryAfter: String?)
        /// `409 upgrade-in-progress`: another request is converting the upgrade.
        case inProgress
        /// No connection; nothing reaches the server.
        case unreachable(URLError.Code)
        /// A problem document with `status`, `slug` and these members besides, as the server sends
        /// it (`upgradeStatus`, `changeStatus`, ...), and `Retry-After` when given; nothing reaches the API.
        case problem(Int, slug: String, members: [String: String], retryAfter: String?)
    }

    struct Sent: Sendable {
        let method: String
        let path: String
        let body: Data?

        var json: [String: Any] {
            body.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] } ?? [:]
        }
    }

    private let faults: Mutex<[(suffix: String, fault: Fault)]>
    private let record = Mutex<[Sent]>([])

    /// `faults` are played in order, each once, on the first request whose path ends with its suffix.
    init(_ faults: [(suffix: String, fault: Fault)] = []) {
        self.faults = Mutex(faults)
    }

    var sent: [Sent] { record.withLock { $0 } }

    /// The requests whose path ends with `suffix`.
    func sent(_ suffix: String) -> [Sent] { sent.filter { $0.path.hasSuffix(suffix) } }

    func client(_ base: String, retryPolicy: RetryPolicy = .standard) -> UpgradeClient {
        UpgradeClient(baseURL: URL(string: base)!, retryPolicy: retryPolicy) { [self] request in
            try await send(request)
        }
    }

    func send(_ request: URLRequest) async throws -> (Data, URLResponse) {
        let url = request.url!
        record.withLock {
            $0.append(Sent(method: request.httpMethod ?? "GET", path: url.path, body: request.httpBody))
        }
        let fault = faults.withLock { list -> Fault? in
            guard let index = list.firstIndex(where: { url.path.hasSuffix($0.suffix) }) else { return nil }
            return list.remove(at: index).fault
        }
        switch fault {
        case nil:
            return try await UpgradeClient.transport(.shared)(request)
        case .loseAnswer:
            _ = try await UpgradeClient.transport(.shared)(request)
            throw URLError(.networkConnectionLost)
        case .busy(let retryAfter):
            var headers = ["Content-Type": "application/problem+json", "X-Request-Id": "busy-request"]
            if let retryAfter { headers["Retry-After"] = retryAfter }
            return Self.answer(url, 503, slug: "server-busy", headers: headers)
        case .inProgress:
            return Self.answer(
                url,
                409,
                slug: "upgrade-in-progress",
                headers: ["Content-Type": "application/problem+json", "X-Request-Id": "in-progress-request"]
            )
        case .unreachable(let code):
            throw URLError(code)
        case .problem(let status, let slug, let members, let retryAfter):
            var headers = ["Content-Type": "application/problem+json", "X-Request-Id": "played-request"]
            if let retryAfter { headers["Retry-After"] = retryAfter }
            return Self.answer(url, status, slug: slug, headers: headers, members: members)
        }
    }

    static func answer(
        _ url: URL,
        _ status: Int,
        slug: String,
        headers: [String: String],
        members: [String: String] = [:]
    ) -> (Data, URLResponse) {
        var body: [String: Any] = [
            "type": "https://siwa-upgrade.dev/problems/\(slug)", "title": slug, "status": status,
            "detail": "played by the test",
        ]
        body.merge(members) { _, member in member }
        let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
        return (try! JSONSerialization.data(withJSONObject: body), response)
    }
}
