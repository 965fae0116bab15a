import Dispatch
import Foundation
import HTTPCore
import Synchronization
import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivers a server-to-server notification as Apple does (docs/apple-protocol.md §4): `POST` with the JSON body
/// `{"payload": "<JWS>"}`. Only loopback URLs are allowed unless the emulator was started with a
/// flag that permits others, and redirects are not followed (one could lead off the machine).
enum EmulatorNotificationSender {
    struct Failure: Error, Sendable {
        let reason: String
    }

    /// The URL, or why it is refused.
    static func validate(_ text: String, allowNonLoopback: Bool) -> Result<URL, Failure> {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host?.lowercased(), !host.isEmpty,
            let url = components.url
        else {
            return .failure(Failure(reason: "\(text.debugDescription) is not an absolute http(s) URL"))
        }
        guard allowNonLoopback || ["127.0.0.1", "localhost", "[::1]", "::1"].contains(host) else {
            return .failure(
                Failure(
                    reason:
                        "\(text.debugDescription) is not a loopback URL; start the emulator with --allow-remote-notify to allow it"
                )
            )
        }
        return .success(url)
    }

    /// Blocks the calling worker until the receiver answers or `timeout` passes; the HTTP status,
    /// or why there is none.
    static func post(_ notification: AppleServerNotification, to url: URL, timeout: Duration) -> Result<Int, Failure> {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(notification.body.serialized())
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        request.timeoutInterval = seconds

        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        let delegate = Delivery()
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        task.resume()
        guard delegate.done.wait(timeout: .now() + seconds + 1) == .success else {
            task.cancel()
            return .failure(Failure(reason: "no answer within \(Int(seconds)) s"))
        }
        return delegate.outcome.withLock { $0 } ?? .failure(Failure(reason: "no answer"))
    }

    /// One delivery's outcome. `@unchecked Sendable` because `NSObject` is not `Sendable`; the
    /// invariant: `outcome` is a `Mutex` and `done` a semaphore, both safe to share.
    private final class Delivery: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let outcome = Mutex<Result<Int, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)

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
            let result: Result<Int, Failure>
            if let error = error as? URLError {
                result = .failure(Failure(reason: "URLError \(error.code.rawValue)"))
            } else if error != nil {
                result = .failure(Failure(reason: "the request failed"))
            } else if let status = (task.response as? HTTPURLResponse)?.statusCode {
                result = .success(status)
            } else {
                result = .failure(Failure(reason: "the answer is not HTTP"))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
    }
}
