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
        case searchAudit, accountOverview
        case deleteAccount
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
    /// Pinged by `/readyz`.
    let store: any UpgradeStore
    let clock: @Sendable () -> Int64
    let metrics: Metrics
    let log: RequestLog
    /// Proxies whose `X-Forwarded-For` names the client (`UPGRADE_TRUSTED_PROXIES`).
    let trustedProxies: TrustedProxies
    /// Bearer tokens for the admin routes (`UPGRADE_ADMIN_TOKENS_FILE`).
    let admin: AdminAuthenticator
    /// Sampled at scrape time for the worker-queue gauge; set once the server exists.
    let statistics: @Sendable () -> HTTPServer.Statistics?
    private let router: Router<Operation>

    public init(
        upgrades: UpgradeService,
        transfers: TransferService,
        signIns: SignInService,
        notifications: AppleNotificationService,
        store: any UpgradeStore,
        auditCursors: AuditCursors,
        revocations: AppleRevocationSender? = nil,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        metrics: Metrics = Metrics(),
        log: RequestLog = RequestLog(),
        adminThrottle: ClientThrottle.Policy? = .default,
        trustedProxies: TrustedProxies = .none,
        adminTokens: AdminTokenSet? = nil,
        statistics: @escaping @Sendable () -> HTTPServer.Statistics? = { nil }
    ) {
        self.upgrades = upgrades
        self.transfers = transfers
        self.signIns = signIns
        self.notifications = notifications
        self.store = store
        self.adminQueries = AdminQueryService(store: store)
        self.auditCursors = auditCursors
        self.deletions = AccountDeletionService(store: store)
        self.revocations = revocations
        self.clock = clock
        self.metrics = metrics
        self.log = log
        self.trustedProxies = trustedProxies
        self.admin = AdminAuthenticator(
            tokens: adminTokens,
            throttle: adminThrottle.map { ClientThrottle(policy: $0, store: store, namespace: .adminTokens) }
        )
        self.statistics = statistics
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
        router.add("GET", "/v1/admin/accounts/{username}", .accountOverview)
        router.add("DELETE", "/v1/admin/accounts/{username}", .deleteAccount)
        router.add("GET", "/healthz", .health)
        router.add("GET", "/readyz", .ready)
        router.add("GET", "/metrics", .metrics)
        self.router = router
    }

    /// Every operation as `METHOD pattern`, for the test that compares the router with openapi.yaml.
    public var operations: [String] { router.routes.map { "\($0.method) \($0.pattern)" } }

    public func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        // Liveness answers without a thread hop, even when every worker is busy.
        guard request.method == "GET", request.path == "/healthz" else { return nil }
        return .json(#"{"status":"ok"}"#)
    }

    public func handle(_ received: HTTPRequest) throws -> HTTPResponse {
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
                response = try perform(matched.operation, request, parameters)
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
            if let failure = error as? UpgradeFailure, failure.notBefore != nil { metrics.recordFailureHeld() }
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
        var fields: [(String, JWSJSON)] = [
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

    private func perform(
        _ operation: Operation,
        _ request: HTTPRequest,
        _ parameters: [String: String]
    ) throws -> HTTPResponse {
        let now = clock()
        let id = parameters["id"] ?? ""
        switch operation {
        case .health:
            return .json(#"{"status":"ok"}"#)
        case .ready:
            do {
                try store.ping()
            } catch {
                throw APIProblem(status: 503, slug: "not-ready", detail: "the database does not answer")
            }
            return .json(#"{"status":"ok"}"#)
        case .metrics:
            var gauges: [(name: String, help: String, value: Double)] = []
            if let statistics = statistics() {
                gauges.append(
                    (
                        "http_worker_queue_depth", "Requests waiting for a worker thread.",
                        Double(statistics.queuedRequests)
                    )
                )
                gauges.append(("http_connections_open", "Open client connections.", Double(statistics.connectionsOpen)))
            }
            // One read of the engine's backlog; a database that does not answer leaves these gauges
            // out rather than failing the scrape.
            if let backlog = try? adminQueries.backlog(clients: upgrades.clientThrottle != nil, now: now) {
                gauges += [
                    (
                        "upgrade_apple_revocations_pending",
                        "Apple refresh tokens of deleted accounts not yet revoked at Apple.",
                        Double(backlog.pendingAppleRevocations)
                    ),
                    (
                        "upgrade_webhooks_pending", "Webhook events neither delivered nor given up.",
                        Double(backlog.webhooks.pending)
                    ),
                    (
                        "upgrade_webhooks_failed", "Webhook events given up after their retry window (replay them).",
                        Double(backlog.webhooks.failed)
                    ),
                    (
                        "upgrade_webhooks_oldest_pending_age_seconds",
                        "Age of the oldest pending webhook event (0: none).",
                        Double(backlog.webhooks.oldestPendingAt.map { max(0, now - $0) } ?? 0)
                    ),
                ]
                if let clients = backlog.clientsInDebt {
                    gauges.append(
                        (
                            "client_throttle_clients",
                            "Clients whose failed credential checks or wrong admin tokens still count against them.",
                            Double(clients)
                        )
                    )
                }
            }
            var response = HTTPResponse.text(metrics.render(gauges: gauges))
            response.headers.replaceOrAppend(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
            return response
        case .startUpgrade:
            let body = try JSONBody(request, allowed: ["username", "password", "ticket", "serviceIdentifier"])
            // An in-app upgrade sends a ticket and an empty (or no) password; without a ticket the
            // password is required.
            let ticket = try body.string("ticket")
            let password = try ticket == nil ? body.requiredString("password") : body.string("password") ?? ""
            let answer = try recorded {
                try upgrades.start(
                    username: try body.requiredString("username"),
                    password: password,
                    ticket: ticket,
                    serviceIdentifier: try body.requiredString("serviceIdentifier"),
                    clientKey: request.clientKey,
                    now: now
                )
            }
            return Self.render(answer, status: 201)
        case .issueTicket:
            // The token is checked before the body is read: an unauthenticated caller learns nothing.
            let token = try admin.authorize(request, scope: .tickets, now: now)
            let body = try JSONBody(request, allowed: ["username", "secondFactorVerified"])
            let issued = try upgrades.issueTicket(
                username: try body.requiredString("username"),
                secondFactorVerified: try body.bool("secondFactorVerified") ?? false,
                issuedBy: token.name,
                now: now
            )
            var response = HTTPResponse(
                status: 201,
                body: JWSJSON.object([
                    "ticket": .string(issued.ticket), "expiresAt": .string(Self.timestamp(issued.expiresAt)),
                ]).serialized()
            )
            response.headers.replaceOrAppend(name: "Content-Type", value: "application/json")
            response.headers.replaceOrAppend(name: "Cache-Control", value: "no-store")
            return response
        case .stepUp:
            let body = try JSONBody(request, allowed: ["code", "recoveryCode"])
            let code: UpgradeService.StepUpCode
            switch (try body.string("code"), try body.string("recoveryCode")) {
            case (let totp?, nil): code = .totp(totp)
            case (nil, let recovery?): code = .recoveryCode(recovery)
            default: throw APIProblem.validation("send exactly one of 'code' and 'recoveryCode'")
            }
            return Self.render(
                try recorded { try upgrades.stepUp(id: id, code: code, clientKey: request.clientKey, now: now) }
            )
        case .appleCredential:
            let body = try JSONBody(
                request,
                allowed: ["identityToken", "authorizationCode", "state", "user", "email", "fullName"]
            )
            // `email` and `fullName` are what Apple gave the device once; the engine checks and keeps
            // them where the account has none, marked as the device's.
            let credential = UpgradeService.AppleCredential(
                identityToken: try body.requiredString("identityToken"),
                authorizationCode: try body.requiredString("authorizationCode"),
                state: try body.requiredString("state"),
                user: try body.string("user"),
                email: try body.string("email"),
                fullName: try body.stringMembers("fullName", allowed: PersonName.partNames).map(PersonName.init(parts:))
            )
            let upgrades = self.upgrades
            let answer = try recorded {
                try blockingWait { () async throws(UpgradeFailure) -> UpgradeAnswer in
                    try await upgrades.submitAppleCredential(id: id, credential, now: now)
                }
            }
            return Self.render(answer)
        case .cancel:
            let reason = try Self.cancelReason(request)
            return Self.render(try recorded { try upgrades.cancel(id: id, reason: reason, now: now) })
        case .getUpgrade:
            return Self.render(try upgrades.view(id: id, now: now))
        case .startPasswordChange:
            return try startPasswordChange(request, now: now)
        case .stepUpPasswordChange:
            return try stepUpPasswordChange(request, id: id, now: now)
        case .cancelPasswordChange:
            let reason = try Self.cancelReason(request)
            return Self.render(try upgrades.cancelPasswordChange(id: id, reason: reason, now: now))
        case .signInNonce:
            return try signInNonce(request, now: now)
        case .signIn:
            return try signIn(request, now: now)
        case .credentialState:
            return try credentialState(request)
        case .notification:
            return try notification(request, now: now)
        case .searchAudit:
            return try searchAudit(request, now: now)
        case .accountOverview:
            return try accountOverview(request, username: parameters["username"], now: now)
        case .deleteAccount:
            return try deleteAccount(request, username: parameters["username"], now: now)
        }
    }

    /// Counts the outcome of an upgrade call for `upgrade_transitions_total` (password changes are
    /// not upgrades and are not counted there).
    func recorded<Answer>(_ body: () throws -> Answer) throws -> Answer {
        do {
            let answer = try body()
            if let answer = answer as? UpgradeAnswer {
                metrics.recordTransition(status: answer.status.rawValue, result: answer.result.rawValue)
            }
            return answer
        } catch let failure as UpgradeFailure {
            if let status = failure.status {
                metrics.recordTransition(status: status.rawValue, result: failure.result.rawValue)
            }
            throw failure
        }
    }

    static func timestamp(_ seconds: Int64) -> String {
        RFC3339.utc(seconds: seconds)
    }

    static func render(_ answer: UpgradeAnswer, status: Int = 200) -> HTTPResponse {
        let members = JWSJSON.object([
            "id": .string(answer.id),
            "status": .string(answer.status.rawValue),
            "result": .string(answer.result.rawValue),
            "state": answer.state.map { .string($0) },
            "nonce": answer.nonce.map { .string($0) },
            "expiresAt": answer.expiresAt.map { .string(timestamp($0)) },
            "accountId": answer.accountID.map { .string($0) },
            "attemptsRemaining": answer.attemptsRemaining.map { .integer(Int64($0)) },
        ])
        var response = HTTPResponse(status: status, body: members.serialized())
        response.headers.replaceOrAppend(name: "Content-Type", value: "application/json")
        response.headers.replaceOrAppend(name: "Cache-Control", value: "no-store")
        return response
    }

    static func render(_ view: UpgradeView) -> HTTPResponse {
        let history = view.history.map { entry in
            JWSJSON.object([
                "at": .string(timestamp(entry.at)),
                "event": .string(entry.event),
                "from": entry.from.map { .string($0) },
                "to": entry.to.map { .string($0) },
                "problem": entry.problem.map { .string(UpgradeProblems.slug(for: $0)) },
            ])
        }
        let body = JWSJSON.object([
            "id": .string(view.id),
            "status": .string(view.status.rawValue),
            "result": view.result.map { .string($0.rawValue) },
            "problem": view.problem.map { .string(UpgradeProblems.slug(for: $0)) },
            "createdAt": .string(timestamp(view.createdAt)),
            "expiresAt": view.expiresAt.map { .string(timestamp($0)) },
            "history": .array(history),
        ])
        var response = HTTPResponse(body: body.serialized())
        response.headers.replaceOrAppend(name: "Content-Type", value: "application/json")
        return response
    }
}

extension HTTPRequest {
    /// The key the engine counts this client's failed credential checks under (an IPv6 client by its /64).
    var clientKey: String? { client?.throttleKey.description }
}
