import HTTPCore
import Synchronization

/// A loopback HTTP endpoint that answers every request with the next scripted response (the last
/// one repeats) and keeps what it received: the other side of an outbound call (the legacy login
/// system, the webhook receiver) when a test needs an answer the doubles cannot give.
final class ScriptedEndpoint: HTTPHandler {
    private let state: Mutex<(answers: [HTTPResponse], received: [HTTPRequest])>

    init(_ answers: [HTTPResponse]) { state = Mutex((answers, [])) }

    var received: [HTTPRequest] { state.withLock { $0.received } }

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        state.withLock { state in
            state.received.append(request)
            return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
        }
    }

    /// Listens on a free loopback port; `shutdown()` the server when done.
    func start() throws -> HTTPServer {
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        configuration.onEvent = { _ in }
        let server = HTTPServer(configuration: configuration, handler: self)
        try server.start()
        return server
    }

    /// `text` as a JSON answer with `status`, and `headers` besides.
    static func json(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(status: status, body: Array(text.utf8))
        response.headers.replaceOrAppend(name: "Content-Type", value: "application/json")
        for (name, value) in headers { response.headers.replaceOrAppend(name: name, value: value) }
        return response
    }
}
