import Glibc
import HTTPCore

// A minimal server for load tests and the descriptor-exhaustion test: `GET /healthz` and `POST /echo`.
// Prints "listening PORT" on standard output once bound, then runs until SIGTERM or SIGINT.
//
// usage: http-load-server [--port N] [--loops N] [--loop-threads N] [--workers N] [--on-loop]
//                         [--max-open-files N] [--request-timeout-ms N] [--max-connections N]
//                         [--max-connections-per-client N]

struct LoadHandler: HTTPHandler {
    /// Answer /healthz on the event loop instead of a worker (measures the server without the hop).
    let healthOnLoop: Bool

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/healthz"), ("HEAD", "/healthz"):
            return .json("{\"status\":\"ok\"}")
        case ("POST", "/echo"):
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: request.body)
        default:
            throw HTTPProblem(status: 404, slug: "not-found", title: "Not found", detail: "No such resource.")
        }
    }

    func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        guard healthOnLoop, request.path == "/healthz", request.method == "GET" else { return nil }
        return .json("{\"status\":\"ok\"}")
    }
}

func say(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    say("http-load-server: \(message)\n", to: STDERR_FILENO)
    exit(2)
}

func parseArguments(_ arguments: [String]) -> (HTTPServer.Configuration, healthOnLoop: Bool) {
    var configuration = HTTPServer.Configuration()
    configuration.port = 8080
    configuration.shutdownSignals = [SIGTERM, SIGINT]
    var healthOnLoop = false
    var rest = arguments[...]
    func number(_ name: String) -> Int {
        guard let text = rest.popFirst(), let value = Int(text) else { fail("\(name) needs a number") }
        return value
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "--port": configuration.port = number(argument)
        case "--loops": configuration.eventLoopCount = number(argument)
        case "--loop-threads": configuration.threadsPerEventLoop = number(argument)
        case "--workers": configuration.workerCount = number(argument)
        case "--max-connections": configuration.maxConnections = number(argument)
        case "--max-connections-per-client": configuration.maxConnectionsPerClient = number(argument)
        case "--request-timeout-ms": configuration.requestTimeout = .milliseconds(number(argument))
        case "--on-loop": healthOnLoop = true
        case "--max-open-files":
            // Lowered in this process only, so a test can exhaust descriptors without touching its own.
            let limit = rlim_t(number(argument))
            var limits = rlimit(rlim_cur: limit, rlim_max: limit)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) != 0 { fail("setrlimit failed (errno \(errno))") }
        default: fail("unknown argument \(argument)")
        }
    }
    return (configuration, healthOnLoop)
}

let (configuration, healthOnLoop) = parseArguments(Array(CommandLine.arguments.dropFirst()))
let server = HTTPServer(configuration: configuration, handler: LoadHandler(healthOnLoop: healthOnLoop))
do {
    try server.start()
} catch {
    fail(error.description)
}
say("listening \(server.port)\n", to: STDOUT_FILENO)
server.wait()
