import UpgradeEngine

/// Signing in and out, and the overview page.
extension ConsoleHandler {
    /// `GET /`: the sign-in form, or the overview for a signed-in member of staff.
    func home(_ context: inout Context) throws -> HTTPResponse {
        guard let (_, session) = context.session else { return signInPage(context) }
        guard session.token.allows(.audit) else {
            return page(context, title: "Overview", section: .overview, ConsoleRender.welcome(session.token))
        }
        let backlog = try queries.backlog(clients: false, now: context.now)
        return page(context, title: "Overview", section: .overview, ConsoleRender.overview(backlog))
    }

    /// The sign-in form with a fresh form token, also set as a cookie (no session exists yet to
    /// hold it); `problem` says why the last attempt failed.
    func signInPage(_ context: Context, status: Int = 200, problem: String? = nil) -> HTTPResponse {
        let csrf = SecureRandom.token(byteCount: 32)
        var response = page(
            context,
            status: status,
            title: "Sign in",
            ConsolePage.signInForm(csrf: csrf, problem: problem)
        )
        response.headers.append(name: "Set-Cookie", value: cookie(signInCookie, csrf, maxAge: ConsoleSessions.lifetime))
        return response
    }

    /// `POST /sign-in`: the typed admin token, checked as the REST admin routes check one (a wrong
    /// one is refused and counted against the client alike), exchanged for a session cookie.
    func signIn(_ context: inout Context) throws -> HTTPResponse {
        let form = try checkedForm(context, expected: context.cookies[signInCookie], allowed: ["token"])
        let token: AdminToken
        do {
            token = try admin.authenticate(form["token"] ?? "", client: context.request.client, now: context.now)
        } catch let problem as APIProblem {
            context.cause = problem.cause
            var response = signInPage(context, status: problem.status, problem: problem.detail)
            if let challenge = problem.headers["WWW-Authenticate"] {
                response.headers.replaceOrAppend(name: "WWW-Authenticate", value: challenge)
            }
            return response
        }
        guard let (id, _) = try sessions.start(token: token, replacing: context.session?.id, now: context.now) else {
            throw Refusal(
                status: 503,
                message: "Too many console sessions are open; try again later.",
                cause: "sessions-full"
            )
        }
        // A failed write of the last use must not refuse an admin who was let in.
        _ = try? admin.usage?.record(token, now: context.now)
        log.log("info", "console sign-in", [("admin", .string(token.name))])
        var response = Self.redirect("/")
        response.headers.append(name: "Set-Cookie", value: cookie(sessionCookie, id, maxAge: ConsoleSessions.lifetime))
        response.headers.append(name: "Set-Cookie", value: cookie(signInCookie, "", maxAge: 0))
        return response
    }

    /// `POST /sign-out`: ends the session at once; its cookie names nothing afterwards.
    func signOut(_ context: inout Context) throws -> HTTPResponse {
        let (id, session) = try requireSession(context)
        _ = try checkedForm(context, expected: session.csrf, allowed: [])
        try sessions.end(id: id)
        log.log("info", "console sign-out", [("admin", .string(session.token.name))])
        var response = Self.redirect("/")
        response.headers.append(name: "Set-Cookie", value: cookie(sessionCookie, "", maxAge: 0))
        return response
    }
}
