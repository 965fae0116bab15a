/// What the `UPGRADE_HEALTH_LISTEN` listener serves: the API's `GET /healthz` and `GET /readyz`,
/// answered (and logged) exactly as on the API listener, and nothing else. It runs as a server of its
/// own, with its own connections and workers, so probes are answered while the API's connection
/// table or worker queue is full.
public struct HealthCheckHandler: HTTPHandler {
    let api: UpgradeAPIHandler

    public init(api: UpgradeAPIHandler) {
        self.api = api
    }

    static func serves(_ request: HTTPRequest) -> Bool {
        request.path == "/healthz" || request.path == "/readyz"
    }

    public func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        Self.serves(request) ? api.respondOnEventLoop(to: request) : nil
    }

    public func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        guard Self.serves(request) else {
            return APIProblem(status: 404, slug: "not-found", detail: "this listener serves only /healthz and /readyz")
                .response
        }
        return try api.handle(request)
    }
}
