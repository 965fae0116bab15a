/// What the `UPGRADE_HEALTH_LISTEN` listener serves: the API's `GET /healthz`, `GET /readyz` and
/// `GET /metrics`, answered (and logged) as on the API listener, except that `/metrics` needs no
/// token here: this listener is the operator's, for probes and scrapers, not the public's. Nothing
/// else. It runs as a server of its own, with its own connections and workers, so probes are
/// answered while the API's connection table or worker queue is full.
public struct HealthCheckHandler: HTTPHandler {
    let api: UpgradeAPIHandler

    public init(api: UpgradeAPIHandler) {
        self.api = api
    }

    static func serves(_ request: HTTPRequest) -> Bool {
        request.path == "/healthz" || request.path == "/readyz" || request.path == "/metrics"
    }

    public func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        Self.serves(request) ? api.respondOnEventLoop(to: request) : nil
    }

    public func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        guard Self.serves(request) else {
            return APIProblem(
                status: 404,
                slug: "not-found",
                detail: "this listener serves only /healthz, /readyz and /metrics"
            ).response
        }
        return try api.handle(request, internalListener: true)
    }
}
