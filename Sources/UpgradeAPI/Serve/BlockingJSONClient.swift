import Dispatch
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small blocking JSON-over-HTTP client for the command line's demo: it plays the device from a
/// plain thread, one call at a time. Not used by the server.
public final class BlockingJSONClient: Sendable {
    public struct Response: Sendable {
        public let status: Int
        public let body: Data
        public var text: String { String(decoding: body, as: UTF8.self) }
        /// The body as a JSON object, or empty if it is not one.
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    let timeout: TimeInterval

    public init(timeout: TimeInterval = 30) {
        self.timeout = timeout
    }

    public func get(_ url: String) throws(Failure) -> Response { try send(url, method: "GET", body: nil) }

    public func post(_ url: String, _ body: [String: String]) throws(Failure) -> Response {
        guard let data = try? JSONSerialization.data(withJSONObject: body) else {
            throw Failure(description: "POST \(url): the body could not be encoded")
        }
        return try send(url, method: "POST", body: data)
    }

    private func send(_ url: String, method: String, body: Data?) throws(Failure) -> Response {
        guard let target = URL(string: url) else { throw Failure(description: "bad URL \(url)") }
        var request = URLRequest(url: target, timeoutInterval: timeout)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let box = ResponseBox()
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            box.set(data, (response as? HTTPURLResponse)?.statusCode, error)
            done.signal()
        }.resume()
        done.wait()
        let (data, status, error) = box.get()
        guard let status, let data else {
            throw Failure(description: "\(method) \(url): \(error.map { "\($0)" } ?? "no response")")
        }
        return Response(status: status, body: data)
    }

    /// Handed from URLSession's callback queue to the waiting thread; the semaphore orders the write
    /// before the read, and the lock makes that explicit.
    private final class ResponseBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value: (Data?, Int?, (any Error)?) = (nil, nil, nil)
        func set(_ data: Data?, _ status: Int?, _ error: (any Error)?) {
            lock.withLock { value = (data, status, error) }
        }
        func get() -> (Data?, Int?, (any Error)?) { lock.withLock { value } }
    }
}
