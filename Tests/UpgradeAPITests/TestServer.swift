import Dispatch
import Foundation

@testable import UpgradeAPI

/// Lets a test hold handler calls inside the handler and release them when it chooses.
final class Gate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// Called by the handler: announce entry, then wait (at most 10 s, so no test can hang here).
    func pass() {
        entered.signal()
        _ = released.wait(timeout: .now() + 10)
    }

    func waitUntilEntered(seconds: Double = 5) -> Bool {
        entered.wait(timeout: .now() + seconds) == .success
    }

    func open(_ count: Int = 1) {
        for _ in 0..<count { released.signal() }
    }
}

/// Collects server events so tests can check what was reported.
final class EventLog: Sendable {
    private let events = Locked<[String]>([])

    func record(_ event: HTTPServerEvent) {
        events.withLock { $0.append(event.description) }
    }

    func contains(_ text: String) -> Bool {
        events.withLock { $0.contains { $0.contains(text) } }
    }

    func count(containing text: String) -> Int {
        events.withLock { $0.count { $0.contains(text) } }
    }
}

struct TestFailure: Error {}

/// Routes used by the server tests.
struct TestHandler: HTTPHandler {
    var gate = Gate()

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        let query = request.query.map(String.init) ?? ""
        let parameters = Dictionary(
            query.split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            },
            uniquingKeysWith: { first, _ in first }
        )
        switch request.path {
        case "/healthz":
            return .json("{\"status\":\"ok\"}")
        case "/hello":
            return .text("hello")
        case "/echo":
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: request.body)
        case "/sleep":
            usleep(UInt32(Int(parameters["ms"] ?? "0") ?? 0) * 1000)
            return .text(parameters["tag"] ?? "")
        case "/block":
            gate.pass()
            return .text("released")
        case "/held":
            // Ready at once, but not to be written before `ms` from now.
            var response = HTTPResponse.text(parameters["tag"] ?? "")
            response.notBefore = ContinuousClock.now.advanced(by: .milliseconds(Int(parameters["ms"] ?? "0") ?? 0))
            return response
        case "/big":
            // Larger than loopback socket buffers, so a client that does not read blocks the write.
            return HTTPResponse(status: 200, body: [UInt8](repeating: 0x62, count: 32 * 1024 * 1024))
        case "/close":
            return HTTPResponse(status: 200, headers: ["Connection": "close"], body: Array("bye".utf8))
        case "/throw":
            throw TestFailure()
        case "/split":
            return HTTPResponse(status: 200, headers: ["X-Injected": "a\r\nSet-Cookie: b"], body: [])
        default:
            throw HTTPProblem(status: 404, slug: "not-found", title: "Not found", detail: "No such route.")
        }
    }

    func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        request.path == "/inline" ? .text("inline") : nil
    }
}

/// A server on a free loopback port with test-sized limits, quiet unless a test reads its events.
final class TestServer {
    let server: HTTPServer
    let events = EventLog()

    init(
        handler: some HTTPHandler = TestHandler(),
        configure: (inout HTTPServer.Configuration) -> Void = { _ in }
    ) throws {
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.eventLoopCount = 2
        configuration.workerCount = 2
        configuration.requestTimeout = .seconds(5)
        configuration.lingerTimeout = .milliseconds(500)
        configuration.timerResolution = .milliseconds(50)
        let events = self.events
        configuration.onEvent = { events.record($0) }
        configure(&configuration)
        server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
    }

    var port: Int { server.port }

    func client() throws -> TestClient {
        try TestClient(port: port)
    }

    /// Shuts down and waits at most `seconds`; false if the server did not stop in time.
    @discardableResult
    func stop(seconds: Double = 10) -> Bool {
        server.shutdown()
        let stopped = DispatchSemaphore(value: 0)
        let server = self.server
        DispatchQueue.global().async {
            server.wait()
            stopped.signal()
        }
        return stopped.wait(timeout: .now() + seconds) == .success
    }
}
