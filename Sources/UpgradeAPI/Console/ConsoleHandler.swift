import Dispatch
import Foundation
import UpgradeEngine

/// The support console (README, "Support console"; docs/architecture.md, "The support console"):
/// HTML pages on a listener of their own (`UPGRADE_CONSOLE_LISTEN`), for staff signed in with an
/// admin token. Each page handler decodes, calls one service method and renders, as the REST
/// handlers do; the pages call the same services as the REST routes and the CLI.
///
/// Every answer carries a policy that allows no script at all and no framing, and every value on a
/// page goes through `HTML.escape`. A POST is accepted only from a live session (its cookie is
/// `SameSite=Strict`) with that session's form token, compared in constant time; anything else is
/// `403` and changes nothing.
public final class ConsoleHandler: HTTPHandler {
    enum Route: Sendable {
        case stylesheet, home, signIn, signOut
        case accounts, deleteAccount, jobs, webhooks, replayWebhooks, revocations, report
    }

    let queries: AdminQueryService
    let reports: ReportService
    let deletions: AccountDeletionService
    let revocations: AppleRevocationSender?
    let store: any UpgradeStore
    /// The same tokens, throttle and usage record as the REST admin routes.
    let admin: AdminAuthenticator
    let sessions: ConsoleSessions
    let trustedProxies: TrustedProxies
    /// `Secure` on the cookies: off only on a loopback listener, where a browser would otherwise
    /// refuse them over plain HTTP.
    let secureCookies: Bool
    let clock: @Sendable () -> Int64
    let log: RequestLog
    private let router: Router<Route>

    public init(
        store: any UpgradeStore,
        adminTokens: Reloadable<AdminTokenSet?>,
        adminThrottle: ClientThrottle.Policy? = .default,
        trustedProxies: TrustedProxies = .none,
        secureCookies: Bool,
        revocations: AppleRevocationSender? = nil,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        log: RequestLog = RequestLog()
    ) {
        self.store = store
        self.queries = AdminQueryService(store: store)
        self.reports = ReportService(store: store)
        self.deletions = AccountDeletionService(store: store)
        self.sessions = ConsoleSessions(store: store)
        self.revocations = revocations
        self.admin = AdminAuthenticator(
            tokens: adminTokens,
            throttle: adminThrottle.map { ClientThrottle(policy: $0, store: store, namespace: .adminTokens) },
            usage: AdminTokenUsage(store: store)
        )
        self.trustedProxies = trustedProxies
        self.secureCookies = secureCookies
        self.clock = clock
        self.log = log
        var router = Router<Route>()
        router.add("GET", ConsoleStylesheet.path, .stylesheet)
        router.add("GET", "/", .home)
        router.add("POST", "/sign-in", .signIn)
        router.add("POST", "/sign-out", .signOut)
        router.add("GET", "/accounts", .accounts)
        router.add("POST", "/accounts/delete", .deleteAccount)
        router.add("GET", "/jobs", .jobs)
        router.add("GET", "/webhooks", .webhooks)
        router.add("POST", "/webhooks/replay", .replayWebhooks)
        router.add("GET", "/revocations", .revocations)
        router.add("GET", "/report", .report)
        self.router = router
    }

    /// What every console answer carries: no script, no plugin, no framing, no referrer, nothing
    /// cached, no sniffing; styles and images only from the console itself.
    static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    public func handle(_ received: HTTPRequest) throws -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        var request = received
        request.client = trustedProxies.client(
            peer: received.client,
            forwardedFor: received.headers.values(for: "X-Forwarded-For")
        )
        let now = clock()
        var context = Context(request: request, now: now, cookies: Self.cookies(request))
        let match = router.match(method: request.method, path: request.path)
        var route = "unmatched"
        switch match {
        case .found(let matched, _): route = matched.pattern
        case .methodNotAllowed(_, let pattern): route = pattern
        case .notFound: break
        }
        var response: HTTPResponse
        do {
            // Sessions are in the database: a failed lookup is an error page, never a signed-in one.
            // The stylesheet needs none, so it costs no read.
            if request.path != ConsoleStylesheet.path { context.session = try currentSession(context) }
            switch match {
            case .found(let matched, _):
                response = try perform(matched.operation, &context)
            case .methodNotAllowed(let allowed, _):
                response = page(
                    context,
                    status: 405,
                    title: "Not allowed",
                    ConsolePage.message("Use \(allowed.joined(separator: " or ")) here.")
                )
                response.headers.replaceOrAppend(name: "Allow", value: allowed.joined(separator: ", "))
            case .notFound:
                response = page(
                    context,
                    status: 404,
                    title: "Not found",
                    ConsolePage.message("The console has no such page.")
                )
            }
        } catch {
            response = failure(error, &context)
        }
        for (name, value) in Self.securityHeaders { response.headers.replaceOrAppend(name: name, value: value) }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        var fields: [(String, JSONValue)] = [
            ("requestId", .string("\(request.id)")), ("method", .string(request.method)), ("route", .string(route)),
            ("status", .integer(Int64(response.status))), ("ms", .double((seconds * 1e6).rounded() / 1e3)),
        ]
        if let client = request.client { fields.append(("client", .string(client.description))) }
        // The token's name, never the token, the cookie or the form token.
        if let session = context.session { fields.append(("admin", .string(session.session.token.name))) }
        if let cause = context.cause { fields.append(("cause", .string(cause))) }
        log.log(response.status >= 500 ? "error" : "info", "console", fields)
        return response
    }

    /// One handler per route; each decodes, calls one service method and renders.
    private func perform(_ route: Route, _ context: inout Context) throws -> HTTPResponse {
        switch route {
        case .stylesheet:
            return HTTPResponse(
                headers: ["Content-Type": "text/css; charset=utf-8"],
                body: Array(ConsoleStylesheet.css.utf8)
            )
        case .home: return try home(&context)
        case .signIn: return try signIn(&context)
        case .signOut: return try signOut(&context)
        case .accounts: return try accounts(&context)
        case .deleteAccount: return try deleteAccount(&context)
        case .jobs: return try jobs(&context)
        case .webhooks: return try webhooks(&context)
        case .replayWebhooks: return try replayWebhooks(&context)
        case .revocations: return try revocations(&context)
        case .report: return try report(&context)
        }
    }

    /// What one request knows of its caller.
    struct Context {
        let request: HTTPRequest
        let now: Int64
        let cookies: [String: String]
        /// The live session the request's cookie names, bound to a token the file still lists.
        var session: (id: String, session: ConsoleSessions.Session)?
        /// Why it failed, for the log line only.
        var cause: String?
    }

    /// The session cookie's name: with `Secure`, the `__Host-` prefix makes browsers refuse it
    /// unless it is also host-only with `Path=/`, so no sibling host can plant or shadow it.
    var sessionCookie: String { secureCookies ? "__Host-console-session" : "console-session" }
    /// The sign-in form's token (a double-submit cookie: no session exists yet).
    var signInCookie: String { secureCookies ? "__Host-console-sign-in" : "console-sign-in" }

    /// The session the cookie names, if it is live and its admin token is still in the token file,
    /// unchanged and unexpired (the file is read again on every reload); otherwise nil, and a
    /// session whose token went is ended.
    func currentSession(_ context: Context) throws -> (id: String, session: ConsoleSessions.Session)? {
        guard let id = context.cookies[sessionCookie],
            let session = try sessions.session(id: id, tokens: admin.tokens.current, now: context.now)
        else { return nil }
        return (id, session)
    }

    /// `name=value` pairs of the `Cookie` fields; a name given twice keeps its first value.
    static func cookies(_ request: HTTPRequest) -> [String: String] {
        var cookies: [String: String] = [:]
        for field in request.headers.values(for: "Cookie") {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { continue }
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                if cookies[name] == nil { cookies[name] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        return cookies
    }

    /// A `Set-Cookie` value: `HttpOnly`, `SameSite=Strict`, `Path=/`, `Secure` unless on loopback;
    /// `maxAge` 0 removes the cookie.
    func cookie(_ name: String, _ value: String, maxAge: Int64) -> String {
        "\(name)=\(value); Max-Age=\(maxAge); Path=/; HttpOnly; SameSite=Strict" + (secureCookies ? "; Secure" : "")
    }

    /// The signed-in session, or `SignedOut` (a GET is sent to the sign-in page, a POST refused).
    func requireSession(_ context: Context) throws -> (id: String, session: ConsoleSessions.Session) {
        guard let session = context.session else { throw SignedOut() }
        return session
    }

    /// The form of a POST, once its form token is the session's (or, for the sign-in form, the
    /// sign-in cookie's); `403` otherwise, before anything is read or changed.
    func checkedForm(_ context: Context, expected: String?, allowed: Set<String>) throws -> [String: String] {
        // A field list that does not parse is refused as a missing token: the check comes first.
        let form =
            (try? UpgradeAPIHandler.strictQuery(
                Substring(String(decoding: context.request.body, as: UTF8.self)),
                allowed: allowed.union(["csrf"])
            )) ?? [:]
        guard let expected, let presented = form["csrf"], ConstantTime.equals(presented, expected) else {
            throw Refusal(
                status: 403,
                message:
                    "This form is out of date or did not come from the console. Reload the page and try again; nothing was changed.",
                cause: "csrf"
            )
        }
        return form
    }

    /// `403` unless the session's token has `scope`.
    func require(_ scope: AdminScope, _ session: ConsoleSessions.Session) throws {
        guard session.token.allows(scope) else {
            throw Refusal(
                status: 403,
                message: "Your admin token lacks the '\(scope.rawValue)' scope.",
                cause: "scope \(scope.rawValue)"
            )
        }
    }

    /// A page answer: the signed-in layout when there is a session, the bare one otherwise.
    func page(
        _ context: Context,
        status: Int = 200,
        title: String,
        section: ConsoleSection? = nil,
        _ content: HTML
    ) -> HTTPResponse {
        let html: HTML
        if let (_, session) = context.session {
            html = ConsolePage.signedIn(title: title, section: section, session: session, content: content)
        } else {
            html = ConsolePage.document(title: title, body: ConsolePage.bare(title: title, content: content))
        }
        return HTTPResponse(
            status: status,
            headers: ["Content-Type": "text/html; charset=utf-8"],
            body: Array(html.markup.utf8)
        )
    }

    /// `303 See Other` to `location`, a path of the console.
    static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: ["Location": location])
    }

    /// An error as a page: the service's message (what the REST problem's `detail` says), or, for
    /// anything unexpected, a bare 500 that is logged and not echoed.
    private func failure(_ error: any Error, _ context: inout Context) -> HTTPResponse {
        switch error {
        case is SignedOut:
            if context.request.method == "GET" { return Self.redirect("/") }
            context.cause = "signed-out"
            return page(context, status: 403, title: "Signed out", ConsolePage.signedOut())
        case let refusal as Refusal:
            context.cause = refusal.cause
            return page(
                context,
                status: refusal.status,
                title: "Refused",
                ConsolePage.message(refusal.message, error: true)
            )
        default:
            guard let problem = UpgradeProblems.problem(for: error) else {
                log.log(
                    "error",
                    "unhandled error",
                    [
                        ("requestId", .string("\(context.request.id)")),
                        ("error", .string(String(describing: type(of: error)))),
                    ]
                )
                return page(
                    context,
                    status: 500,
                    title: "Error",
                    ConsolePage.message("The console could not answer this request.", error: true)
                )
            }
            context.cause = problem.cause ?? problem.slug
            var response = page(
                context,
                status: problem.status,
                title: "Error",
                ConsolePage.message(problem.detail, error: true)
            )
            for name in ["Retry-After", "WWW-Authenticate"] {
                if let value = problem.response.headers[name] {
                    response.headers.replaceOrAppend(name: name, value: value)
                }
            }
            return response
        }
    }

    /// No live session: a GET goes to the sign-in page, anything else is refused.
    struct SignedOut: Error {}

    /// A refusal the console words itself (a bad form token, a missing scope, a bad confirmation).
    struct Refusal: Error {
        let status: Int
        let message: String
        var cause: String? = nil
    }
}
