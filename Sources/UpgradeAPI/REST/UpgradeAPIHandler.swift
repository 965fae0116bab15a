import Dispatch
import Foundation
import UpgradeEngine

/// The REST API (Schema/openapi.yaml) on top of `HTTPServer`: routing, strict JSON bodies, problem+json
/// errors, metrics and one log line per request.
public final class UpgradeAPIHandler: HTTPHandler {
    enum Operation: Sendable {
        case startUpgrade, getUpgrade, stepUp, appleCredential, cancel, issueTicket
        case startPasswordChange, stepUpPasswordChange, cancelPasswordChange
        case signInNonce, signIn, credentialState, notification
        case searchAudit, accountOverview, migrationReport
        case deleteAccount, provisionAccount, provisionBatch
        case health, ready, metrics
    }

    let upgrades: UpgradeService
    let transfers: TransferService
    let signIns: SignInService
    let notifications: AppleNotificationService
    /// `GET /v1/admin/audit` and `GET /v1/admin/accounts/{username}`.
    let adminQueries: AdminQueryService
    /// The audit search's `nextCursor`s, tamper-evident under `UPGRADE_SECRET_KEY_FILE`.
    let auditCursors: AuditCursors
    /// `DELETE /v1/admin/accounts/{username}`: the deletion, then one attempt at its revocation.
    let deletions: AccountDeletionService
    let revocations: AppleRevocationSender?
    /// `PUT /v1/admin/accounts/{username}` and `POST /v1/admin/accounts/batch`.
    let provisioning: AccountProvisioningService
    /// The one route whose body may exceed the server's default limit (up to 1 MiB): 1000 rows.
    public static let provisionBatchRoute = "POST /v1/admin/accounts/batch"
    /// Pinged by `/readyz`.
    let store: any UpgradeStore
    let clock: @Sendable () -> Int64
    let metrics: Metrics
    /// `GET /metrics` on this listener without a token (`serve --dev` only); otherwise it needs a
    /// token with the `metrics` scope, and `UPGRADE_HEALTH_LISTEN` serves it without one.
    let openMetrics: Bool
    let log: RequestLog
    /// Proxies whose `X-Forwarded-For` names the client (`UPGRADE_TRUSTED_PROXIES`).
    let trustedProxies: TrustedProxies
    /// Bearer tokens for the admin routes (`UPGRADE_ADMIN_TOKENS_FILE`).
    let admin: AdminAuthenticator
    /// Sampled at scrape time for the worker-queue gauge; set once the server exists.
    let statistics: @Sendable () -> HTTPServer.Statistics?
    /// The running keyring's ids, newest first, read at each scrape (a reload replaces them).
    let keyIDs: @Sendable () -> [String]
    private let router: Router<Operation>

    public init(
        upgrades: UpgradeService,
        transfers: TransferService,
        signIns: SignInService,
        notifications: AppleNotificationService,
        store: any UpgradeStore,
        auditCursors: AuditCursors,
        revocations: AppleRevocationSender? = nil,
        appleClientID: String? = nil,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        metrics: Metrics = Metrics(),
        log: RequestLog = RequestLog(),
        adminThrottle: ClientThrottle.Policy? = .default,
        trustedProxies: TrustedProxies = .none,
        adminTokens: AdminTokenSet? = nil,
        reloadableAdminTokens: Reloadable<AdminTokenSet?>? = nil,
        statistics: @escaping @Sendable () -> HTTPServer.Statistics? = { nil },
        keyIDs: @escaping @Sendable () -> [String] = { [] },
        openMetrics: Bool = false
    ) {
        self.openMetrics = openMetrics
        self.upgrades = upgrades
        self.transfers = transfers
        self.signIns = signIns
        self.notifications = notifications
        self.store = store
        self.adminQueries = AdminQueryService(store: store)
        self.auditCursors = auditCursors
        self.deletions = AccountDeletionService(store: store)
        self.revocations = revocations
        // Provisioned Apple links record the first client id, as `accounts import` does by default.
        self.provisioning = AccountProvisioningService(upgrades: upgrades, appleClientID: appleClientID)
        self.clock = clock
        self.metrics = metrics
        self.log = log
        self.trustedProxies = trustedProxies
        self.admin = AdminAuthenticator(
            tokens: reloadableAdminTokens ?? Reloadable(adminTokens),
            throttle: adminThrottle.map { ClientThrottle(policy: $0, store: store, namespace: .adminTokens) },
            usage: AdminTokenUsage(store: store)
        )
        self.statistics = statistics
        self.keyIDs = keyIDs
        // A username in a path is typed text, not an identifier we issued.
        var router = Router<Operation>(textCaptures: ["username"])
        router.add("POST", "/v1/upgrades", .startUpgrade)
        router.add("GET", "/v1/upgrades/{id}", .getUpgrade)
        router.add("POST", "/v1/upgrades/{id}/step-up", .stepUp)
        router.add("POST", "/v1/upgrades/{id}/apple-credential", .appleCredential)
        router.add("POST", "/v1/upgrades/{id}/cancel", .cancel)
        router.add("POST", "/v1/upgrade-tickets", .issueTicket)
        router.add("POST", "/v1/password-changes", .startPasswordChange)
        router.add("POST", "/v1/password-changes/{id}/step-up", .stepUpPasswordChange)
        router.add("POST", "/v1/password-changes/{id}/cancel", .cancelPasswordChange)
        router.add("POST", "/v1/apple/sign-in/nonce", .signInNonce)
        router.add("POST", "/v1/apple/sign-in", .signIn)
        router.add("GET", "/v1/apple/credential-state", .credentialState)
        router.add("POST", "/v1/apple/notifications", .notification)
        router.add("GET", "/v1/admin/audit", .searchAudit)
        router.add("GET", "/v1/admin/report", .migrationReport)
        router.add("GET", "/v1/admin/accounts/{username}", .accountOverview)
        router.add("DELETE", "/v1/admin/accounts/{username}", .deleteAccount)
        router.add("PUT", "/v1/admin/accounts/{username}", .provisionAccount)
        router.add("POST", "/v1/admin/accounts/batch", .provisionBatch)
        router.add("GET", "/healthz", .health)
        router.add("GET", "/readyz", .ready)
        router.add("GET", "/metrics", .metrics)
        self.router = router
    }

    /// Every operation as `METHOD pattern`, for the test that compares the router with openapi.yaml.
    public var operations: [String] { router.routes.map { "\($0.method) \($0.pattern)" } }

    public func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        // Liveness answers without a thread hop, even when every worker is busy.
        guard request.method == "GET" || request.method == "HEAD", request.path == "/healthz" else { return nil }
        return Self.ok
    }

    public func handle(_ received: HTTPRequest) throws -> HTTPResponse {
        try handle(received, internalListener: false)
    }

    /// `handle`, for the internal listener too (`HealthCheckHandler`), where `GET /metrics` needs
    /// no token: that listener is the operator's, not the public's (README, Health and metrics).
    func handle(_ received: HTTPRequest, internalListener: Bool) throws -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        // From here on `client` is the client, the peer only when no trusted proxy forwarded it.
        var request = received
        request.client = trustedProxies.client(
            peer: received.client,
            forwardedFor: received.headers.values(for: "X-Forwarded-For")
        )
        var route = "unmatched"
        var problemSlug: String?
        // Why an internal failure happened (a storage error's code, say): logged, never answered.
        var cause: String?
        let response: HTTPResponse
        do {
            switch router.match(method: request.method, path: request.path) {
            case .found(let matched, let parameters):
                route = matched.pattern
                response = try perform(matched.operation, request, parameters, internalListener: internalListener)
            case .methodNotAllowed(let allowed, let pattern):
                route = pattern
                var problem = APIProblem(
                    status: 405,
                    slug: "method-not-allowed",
                    detail: "use \(allowed.joined(separator: " or "))"
                )
                problem.headers.replaceOrAppend(name: "Allow", value: allowed.joined(separator: ", "))
                throw problem
            case .notFound:
                throw APIProblem(status: 404, slug: "not-found", detail: "no such resource")
            }
        } catch {
            if let failure = error as? ServiceFailure, failure.notBefore != nil { metrics.recordFailureHeld() }
            if let problem = UpgradeProblems.problem(for: error) {
                problemSlug = problem.slug
                cause = problem.cause
                response = problem.response
            } else {
                // Anything unexpected is logged here and answered as a bare 500, never echoed.
                log.log(
                    "error",
                    "unhandled error",
                    [("requestId", .string("\(request.id)")), ("error", .string(String(describing: type(of: error))))]
                )
                problemSlug = "internal"
                response =
                    APIProblem(status: 500, slug: "internal", detail: "the server could not answer this request")
                    .response
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        metrics.recordRequest(route: route, method: request.method, status: response.status, seconds: seconds)
        var fields: [(String, JSONValue)] = [
            ("requestId", .string("\(request.id)")), ("method", .string(request.method)), ("route", .string(route)),
            ("status", .integer(Int64(response.status))), ("ms", .double((seconds * 1e6).rounded() / 1e3)),
        ]
        if let client = request.client { fields.append(("client", .string(client.description))) }
        if let peer = received.client, peer != request.client { fields.append(("proxy", .string(peer.description))) }
        if let problemSlug { fields.append(("problem", .string(problemSlug))) }
        if let cause { fields.append(("cause", .string(cause))) }
        // The server sends `request.id` as the response's `X-Request-Id`, so a client report can be
        // matched to this line.
        log.log(response.status >= 500 ? "error" : "info", "request", fields)
        return response
    }

    /// One handler per operation: each decodes, calls one service method and renders; whatever it
    /// throws becomes a problem in `handle`, through `UpgradeProblems.problem(for:)`.
    private func perform(
        _ operation: Operation,
        _ request: HTTPRequest,
        _ parameters: [String: String],
        internalListener: Bool
    ) throws -> HTTPResponse {
        let now = clock()
        let id = parameters["id"] ?? ""
        switch operation {
        case .startUpgrade: return try startUpgrade(request, now: now)
        case .getUpgrade: return try getUpgrade(id: id, now: now)
        case .stepUp: return try stepUp(request, id: id, now: now)
        case .appleCredential: return try appleCredential(request, id: id, now: now)
        case .cancel: return try cancel(request, id: id, now: now)
        case .issueTicket: return try issueTicket(request, now: now)
        case .startPasswordChange: return try startPasswordChange(request, now: now)
        case .stepUpPasswordChange: return try stepUpPasswordChange(request, id: id, now: now)
        case .cancelPasswordChange: return try cancelPasswordChange(request, id: id, now: now)
        case .signInNonce: return try signInNonce(request, now: now)
        case .signIn: return try signIn(request, now: now)
        case .credentialState: return try credentialState(request)
        case .notification: return try notification(request, now: now)
        case .searchAudit: return try searchAudit(request, now: now)
        case .migrationReport: return try migrationReport(request, now: now)
        case .accountOverview: return try accountOverview(request, username: parameters["username"], now: now)
        case .deleteAccount: return try deleteAccount(request, username: parameters["username"], now: now)
        case .provisionAccount: return try provisionAccount(request, username: parameters["username"], now: now)
        case .provisionBatch: return try provisionBatch(request, now: now)
        case .health: return Self.ok
        case .ready: return try ready()
        case .metrics:
            // The counters tell which usernames exist (a failed start queues a webhook only for an
            // account) and what their hashes cost: not for strangers (docs/architecture.md §10.3).
            if !internalListener && !openMetrics { _ = try admin.authorize(request, scope: .metrics, now: now) }
            return scrape(now: now)
        }
    }

    static let ok = HTTPResponse.json(#"{"status":"ok"}"#)

    /// `GET /readyz`: the database answers (a `StorageError` is `503 not-ready`, `UpgradeProblems`).
    func ready() throws -> HTTPResponse {
        try store.ping()
        return Self.ok
    }

    /// `GET /metrics`: the counters, the server's statistics and one read of the engine's backlog.
    func scrape(now: Int64) -> HTTPResponse {
        // A database that does not answer leaves the backlog's gauges out rather than failing the scrape.
        let backlog = try? adminQueries.backlog(clients: upgrades.clientThrottle != nil, now: now)
        return HTTPResponse(
            headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
            body: Array(metrics.render(statistics: statistics(), backlog: backlog, keyIDs: keyIDs(), now: now).utf8)
        )
    }

    static func timestamp(_ seconds: Int64) -> String {
        RFC3339.utc(seconds: seconds)
    }

    /// A JSON answer that carries something a cache must not keep (an id, a ticket, a nonce).
    static func noStoreJSON(_ body: JSONValue, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: body.serialized()
        )
    }
}

extension HTTPRequest {
    /// The key the engine counts this client's failed credential checks under (an IPv6 client by its /64).
    var clientKey: String? { client?.throttleKey.description }
}
