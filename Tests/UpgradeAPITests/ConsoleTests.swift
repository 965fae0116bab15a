import Foundation
import Testing
import UpgradeEngine
import UpgradeTestSupport

@testable import UpgradeAPI

/// The support console over HTTP, on its own listener of a real `serve --dev`: its headers, sign-in
/// with an admin token, the session cookie and its end, the form token on every POST, and the
/// token's scopes. Each refusal is checked to change nothing.
@Suite("Support console")
struct ConsoleTests {
    /// A token file holding `support` (accounts, audit) and `auditor` (audit only), removed with
    /// the last fixture that uses it.
    final class Tokens: Sendable {
        let directory: URL
        let path: String
        let support: String
        let auditor: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("tokens").path
            let now = Int64(Date().timeIntervalSince1970)
            support = try AdminTokenFile.add(name: "support", scopes: [.accounts, .audit], path: path, now: now)
            auditor = try AdminTokenFile.add(name: "auditor", scopes: [.audit], path: path, now: now)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    /// A dev server with a console listener and a token file (`Tokens`); given another fixture's
    /// tokens and database, a second instance beside it, or the same instance after a restart.
    final class Fixture {
        let tokens: Tokens
        let server: DevServer
        var tokensPath: String { tokens.path }
        var support: String { tokens.support }
        var auditor: String { tokens.auditor }

        init(
            _ backend: Backend = .sqlite,
            environment: [String: String] = [:],
            tokens: Tokens? = nil,
            database: ServerDatabase? = nil
        ) throws {
            let tokens = try tokens ?? Tokens()
            self.tokens = tokens
            server = try DevServer(
                backend,
                database: database,
                environment: [
                    "UPGRADE_CONSOLE_LISTEN": "127.0.0.1:0", "UPGRADE_ADMIN_TOKENS_FILE": tokens.path,
                ].merging(environment) { _, given in given }
            )
        }

        /// Another instance on this one's database and token file.
        func another() throws -> Fixture {
            try Fixture(tokens: tokens, database: server.database)
        }

        var port: Int { server.application.consoleServer!.port }

        /// One request on a connection of its own.
        func send(
            _ method: String,
            _ path: String,
            cookies: [String: String] = [:],
            form: [(String, String)]? = nil
        ) throws -> TestClient.Response {
            let client = try TestClient(port: port)
            var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            if !cookies.isEmpty {
                head += "Cookie: " + cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") + "\r\n"
            }
            var body = ""
            if let form {
                body = form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
                head += "Content-Type: application/x-www-form-urlencoded\r\n"
            }
            try client.send(head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
            return try client.readResponse()
        }

        static func encode(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        }

        /// The value `name` is set to by the response's `Set-Cookie` fields.
        static func cookie(_ name: String, in response: TestClient.Response) -> String? {
            for field in response.headers where field.name.lowercased() == "set-cookie" {
                let pair = field.value.split(separator: ";")[0].split(
                    separator: "=",
                    maxSplits: 1,
                    omittingEmptySubsequences: false
                )
                if pair.count == 2, pair[0] == name { return String(pair[1]) }
            }
            return nil
        }

        /// The form token on a page.
        static func csrf(in page: TestClient.Response) -> String? {
            guard let range = page.text.range(of: "name=\"csrf\" value=\"") else { return nil }
            return String(page.text[range.upperBound...].prefix { $0 != "\"" })
        }

        /// Signs in with `token`: the session cookie and the session's form token.
        func signIn(_ token: String) throws -> (session: String, csrf: String) {
            let form = try send("GET", "/")
            let signInToken = try #require(Self.cookie("console-sign-in", in: form))
            let answer = try send(
                "POST",
                "/sign-in",
                cookies: ["console-sign-in": signInToken],
                form: [("token", token), ("csrf", signInToken)]
            )
            #expect(answer.status == 303)
            let session = try #require(Self.cookie("console-session", in: answer))
            let home = try send("GET", "/", cookies: ["console-session": session])
            return (session, try #require(Self.csrf(in: home)))
        }

        func accountExists(_ username: String) throws -> Bool {
            try server.application.store.read { tx in try tx.account(username: try Username(username)) } != nil
        }
    }

    static func reload(_ fixture: Fixture) throws {
        guard case .applied = fixture.server.application.reload() else {
            throw TestClient.Failure(description: "reload refused")
        }
    }

    static let policy =
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    @Test("every answer, refusals included, carries the policy without script, no framing, no sniffing, no caching")
    func headers() throws {
        let fixture = try Fixture()
        let answers = [
            try fixture.send("GET", "/"), try fixture.send("GET", "/console.css"), try fixture.send("GET", "/nowhere"),
            try fixture.send("POST", "/sign-in", form: [("token", fixture.support)]), try fixture.send("GET", "/jobs"),
            try fixture.send("DELETE", "/"),
        ]
        #expect(answers.map(\.status) == [200, 200, 404, 403, 303, 405])
        for answer in answers {
            #expect(answer.header("Content-Security-Policy") == Self.policy)
            #expect(answer.header("X-Frame-Options") == "DENY")
            #expect(answer.header("X-Content-Type-Options") == "nosniff")
            #expect(answer.header("Referrer-Policy") == "no-referrer")
            #expect(answer.header("Cache-Control") == "no-store")
        }
        #expect(answers[1].header("Content-Type") == "text/css; charset=utf-8")
        #expect(!answers[0].text.contains("<script") && !answers[0].text.contains("style="))
    }

    @Test("sign-in sets an HttpOnly, SameSite=Strict session cookie for 15 minutes, without Secure on loopback")
    func sessionCookie() throws {
        let fixture = try Fixture()
        let form = try fixture.send("GET", "/")
        let signInToken = try #require(Fixture.cookie("console-sign-in", in: form))
        let answer = try fixture.send(
            "POST",
            "/sign-in",
            cookies: ["console-sign-in": signInToken],
            form: [("token", fixture.support), ("csrf", signInToken)]
        )
        #expect(answer.status == 303 && answer.header("Location") == "/")
        let field = try #require(
            answer.headers.first { $0.name.lowercased() == "set-cookie" && $0.value.hasPrefix("console-session=") }
        )
        #expect(field.value.hasSuffix("; Max-Age=900; Path=/; HttpOnly; SameSite=Strict"))
        // The id is never logged.
        let id = try #require(Fixture.cookie("console-session", in: answer))
        let logs = fixture.server.logs.lines.withLock { $0 }
        #expect(!logs.contains { $0.contains(id) || $0.contains(fixture.support) })
        #expect(logs.contains { $0.contains("console sign-in") && $0.contains("support") })
    }

    @Test("off loopback the cookies are Secure and __Host- prefixed")
    func secureCookies() throws {
        let database = try ServerDatabase(.sqlite)
        let store = try DatabaseLocation.parse(database.url).open()
        _ = try store.migrate(now: 0)
        let handler = ConsoleHandler(store: store, adminTokens: Reloadable(nil), secureCookies: true)
        let answer = try handler.handle(
            HTTPRequest(head: HTTPRequestHead(method: "GET", target: "/", version: .http1_1, headers: ["Host": "x"]))
        )
        let cookie = try #require(answer.headers.values(for: "Set-Cookie").first)
        #expect(cookie.hasPrefix("__Host-console-sign-in="))
        #expect(cookie.hasSuffix("; Path=/; HttpOnly; SameSite=Strict; Secure"))
    }

    @Test("a wrong token is refused as on the REST admin API and counted against the client like it")
    func wrongToken() async throws {
        let fixture = try Fixture(environment: ["UPGRADE_ADMIN_THROTTLE": "2/600"])
        var statuses: [Int] = []
        for _ in 0..<3 {
            let form = try fixture.send("GET", "/")
            let signInToken = try #require(Fixture.cookie("console-sign-in", in: form))
            let answer = try fixture.send(
                "POST",
                "/sign-in",
                cookies: ["console-sign-in": signInToken],
                form: [("token", "siwa_admin_wrong"), ("csrf", signInToken)]
            )
            statuses.append(answer.status)
            #expect(Fixture.cookie("console-session", in: answer) == nil)
            if answer.status == 401 { #expect(answer.text.contains("the admin token is not valid")) }
        }
        #expect(statuses == [401, 401, 429])
        // The REST API counts the same: this client is over its limit there too.
        let rest = try await fixture.server.send(
            "GET",
            "/v1/admin/audit",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer siwa_admin_wrong"]
        )
        #expect(rest.status == 429)
        // A valid token is never throttled.
        _ = try fixture.signIn(fixture.support)
    }

    @Test("sign-out, the lifetime and removing the token from the file each end a session")
    func sessionEnds() throws {
        let fixture = try Fixture()
        let first = try fixture.signIn(fixture.support)
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": first.session]).status == 200)
        let out = try fixture.send(
            "POST",
            "/sign-out",
            cookies: ["console-session": first.session],
            form: [("csrf", first.csrf)]
        )
        #expect(out.status == 303 && Fixture.cookie("console-session", in: out) == "")
        let after = try fixture.send("GET", "/jobs", cookies: ["console-session": first.session])
        #expect(after.status == 303 && after.header("Location") == "/")

        let second = try fixture.signIn(fixture.support)
        fixture.server.clock.advance(ConsoleSessions.lifetime)
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": second.session]).status == 303)

        let third = try fixture.signIn(fixture.support)
        try AdminTokenFile.remove(name: "support", path: fixture.tokensPath)
        // Until the reload the running server still lists the token.
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": third.session]).status == 200)
        try Self.reload(fixture)
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": third.session]).status == 303)
    }

    @Test(
        "a POST without the form token, with a wrong one, or without a session is 403 and deletes nothing",
        arguments: Backend.all
    )
    func csrf(_ backend: Backend) throws {
        let fixture = try Fixture(backend)
        try fixture.server.addAccount("victim", password: "pw-victim")
        let (session, csrf) = try fixture.signIn(fixture.support)
        let cookies = ["console-session": session]
        let attempts: [([String: String], [(String, String)])] = [
            (cookies, [("username", "victim"), ("confirm", "victim")]),
            // One character changed (a token may itself begin with "x").
            (
                cookies,
                [
                    ("username", "victim"), ("confirm", "victim"),
                    ("csrf", (csrf.hasPrefix("x") ? "y" : "x") + csrf.dropFirst()),
                ]
            ),
            (cookies, [("username", "victim"), ("confirm", "victim"), ("csrf", "")]),
            ([:], [("username", "victim"), ("confirm", "victim"), ("csrf", csrf)]),
        ]
        for (cookies, form) in attempts {
            #expect(try fixture.send("POST", "/accounts/delete", cookies: cookies, form: form).status == 403)
            #expect(try fixture.accountExists("victim"))
        }
        // A confirmation that is not the username deletes nothing either.
        let mistyped = try fixture.send(
            "POST",
            "/accounts/delete",
            cookies: cookies,
            form: [("username", "victim"), ("confirm", "victi"), ("csrf", csrf)]
        )
        #expect(try mistyped.status == 422 && fixture.accountExists("victim"))
        let deleted = try fixture.send(
            "POST",
            "/accounts/delete",
            cookies: cookies,
            form: [("username", "victim"), ("confirm", "victim"), ("csrf", csrf)]
        )
        #expect(deleted.status == 200 && deleted.text.contains("The account victim was deleted."))
        #expect(try !fixture.accountExists("victim"))
        let audit = try fixture.server.application.store.read { tx in try tx.auditEvents(AuditSearch(limit: 50)) }
        #expect(audit.contains { $0.event == "account.deleted" && $0.detail["by"] == "support" })
    }

    @Test(
        "the token's scopes: without accounts no delete button and 403 when posting; without audit no background work"
    )
    func scopes() throws {
        let fixture = try Fixture()
        try fixture.server.addAccount("alice", password: "pw-alice")
        let (session, csrf) = try fixture.signIn(fixture.auditor)
        let page = try fixture.send("GET", "/accounts?username=alice", cookies: ["console-session": session])
        #expect(page.status == 200 && page.text.contains("Audit trail of"))
        #expect(!page.text.contains("/accounts/delete") && !page.text.contains("Account id"))
        let posted = try fixture.send(
            "POST",
            "/accounts/delete",
            cookies: ["console-session": session],
            form: [("username", "alice"), ("confirm", "alice"), ("csrf", csrf)]
        )
        #expect(try posted.status == 403 && fixture.accountExists("alice"))
        let replay = try fixture.send(
            "POST",
            "/webhooks/replay",
            cookies: ["console-session": session],
            form: [("since", "0"), ("csrf", csrf)]
        )
        #expect(replay.status == 403)

        let now = Int64(Date().timeIntervalSince1970)
        let ticketsOnly = try AdminTokenFile.add(
            name: "tickets",
            scopes: [.tickets],
            path: fixture.tokensPath,
            now: now
        )
        try Self.reload(fixture)
        let narrow = try fixture.signIn(ticketsOnly)
        for path in ["/jobs", "/webhooks", "/revocations", "/accounts?username=alice"] {
            #expect(try fixture.send("GET", path, cookies: ["console-session": narrow.session]).status == 403)
        }
        let home = try fixture.send("GET", "/", cookies: ["console-session": narrow.session])
        #expect(!home.text.contains("href=\"/jobs\""))
    }

    @Test("a display name holding markup is shown as text on the account page")
    func escaping() throws {
        let fixture = try Fixture()
        try fixture.server.addAccount("mallory", password: "pw-mallory")
        let payload = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>"
        try fixture.server.application.store.write { tx in
            let account = try #require(try tx.account(username: try Username("mallory")))
            try tx.upsertAccountProfile(
                AccountProfileRecord(
                    accountID: account.id,
                    email: nil,
                    displayName: payload,
                    importRun: nil,
                    importLine: nil,
                    updatedAt: 0,
                    displayNameSource: .import
                )
            )
        }
        let (session, _) = try fixture.signIn(fixture.support)
        let page = try fixture.send("GET", "/accounts?username=mallory", cookies: ["console-session": session])
        #expect(page.status == 200)
        #expect(page.text.contains(HTML.escape(payload)))
        #expect(!page.text.contains("<script") && !page.text.contains("<img"))
    }

    @Test(
        "the background pages list leases, imports, running servers, the outbox and pending revocations",
        arguments: Backend.all
    )
    func operations(_ backend: Backend) throws {
        let fixture = try Fixture(backend)
        let store = fixture.server.application.store
        let now = fixture.server.clock.now
        try store.write { tx in
            _ = try tx.acquireJobLease(
                JobLeaseRecord(
                    job: "transfer complete",
                    holder: "batch-1 pid 7 run ab",
                    token: "lease-secret",
                    acquiredAt: now,
                    heartbeatAt: now,
                    expiresAt: now + 30
                ),
                now: now
            )
            try tx.upsertImportRun(
                ImportRunRecord(
                    id: "imp_1",
                    source: "users.csv (csv)",
                    lastLine: 9,
                    created: 8,
                    startedAt: now,
                    updatedAt: now
                )
            )
        }
        let (session, _) = try fixture.signIn(fixture.support)
        let jobs = try fixture.send("GET", "/jobs", cookies: ["console-session": session])
        #expect(
            jobs.text.contains("transfer complete") && jobs.text.contains("running")
                && jobs.text.contains("users.csv (csv)")
        )
        #expect(!jobs.text.contains("lease-secret"))
        // This server's own row, written as it started, and another instance's still on the old key.
        let own = fixture.server.application.instance.record(now: now)
        #expect(jobs.text.contains("<td><span class=\"mono\">\(own.listen)</span></td>"), "\(jobs.text)")
        #expect(!jobs.text.contains("seal under different keys"))
        try store.write { tx in
            try tx.recordServeInstance(
                ServeInstanceRecord(
                    id: "other",
                    host: "host-<b>",
                    pid: 77,
                    listen: "10.0.0.2:8080",
                    keyIDs: ["k0"],
                    startedAt: now - 60,
                    seenAt: now - 5
                )
            )
        }
        let servers = try fixture.send("GET", "/jobs", cookies: ["console-session": session]).text
        #expect(servers.contains("host-&lt;b&gt;") && servers.contains("10.0.0.2:8080") && servers.contains("5 s ago"))
        let sealing = own.keyIDs[0] < "k0" ? "\(own.keyIDs[0]), k0" : "k0, \(own.keyIDs[0])"
        #expect(servers.contains("These servers seal under different keys (\(sealing))"), "\(servers)")
        let webhooks = try fixture.send("GET", "/webhooks", cookies: ["console-session": session])
        #expect(webhooks.status == 200 && webhooks.text.contains("action=\"/webhooks/replay\""))
        let revocations = try fixture.send("GET", "/revocations", cookies: ["console-session": session])
        #expect(revocations.status == 200 && revocations.text.contains("Pending"))
    }

    @Test("the report page shows the report's numbers and SVG charts, and needs the audit scope")
    func reportPage() throws {
        let fixture = try Fixture()
        try fixture.server.addAccount("alice", password: "pw-alice")
        try fixture.server.addAccount("bob", password: "pw-bob")
        let (session, _) = try fixture.signIn(fixture.auditor)
        let page = try fixture.send("GET", "/report", cookies: ["console-session": session])
        #expect(page.status == 200)
        let now = fixture.server.clock.now
        let report = try ReportService(store: fixture.server.application.store).report(
            since: (now / 86_400 - 29) * 86_400,
            until: now,
            now: now
        )
        #expect(page.text.contains("data-field=\"accounts.total\">\(report.accounts.total)<"))
        #expect(page.text.contains("data-field=\"accounts.password\">\(report.accounts.password)<"))
        #expect(page.text.components(separatedBy: "<svg class=\"chart\"").count - 1 == 4)
        #expect(!page.text.contains("<script") && !page.text.contains("style="))
        let bad = try fixture.send("GET", "/report?since=yesterday", cookies: ["console-session": session])
        #expect(bad.status == 400)

        let accountsOnly = try AdminTokenFile.add(
            name: "deleter",
            scopes: [.accounts],
            path: fixture.tokensPath,
            now: Int64(Date().timeIntervalSince1970)
        )
        try Self.reload(fixture)
        let narrow = try fixture.signIn(accountsOnly)
        #expect(try fixture.send("GET", "/report", cookies: ["console-session": narrow.session]).status == 403)
    }

    /// 2026-11-28T13:45:10Z, a Saturday afternoon.
    static let afternoon: Int64 = 1_795_873_510

    @Test("the report page's range: each preset and each pair of days gives its since and until")
    func reportRanges() throws {
        let now = Self.afternoon
        let today: Int64 = 1_795_824_000
        #expect(
            RFC3339.utc(seconds: now) == "2026-11-28T13:45:10Z" && RFC3339.utc(seconds: today).hasSuffix("T00:00:00Z")
        )
        func range(_ query: [String: String]) throws -> ConsoleReportRange {
            try ConsoleReportRange.parse(query, now: now)
        }
        let cases: [([String: String], since: Int64?, until: Int64, heading: String)] = [
            ([:], today - 29 * 86_400, now, "last 30 days, 2026-10-30 to 2026-11-28"),
            (["range": "7d"], today - 6 * 86_400, now, "last 7 days, 2026-11-22 to 2026-11-28"),
            (["range": "30d"], today - 29 * 86_400, now, "last 30 days, 2026-10-30 to 2026-11-28"),
            (["range": "90d"], today - 89 * 86_400, now, "last 90 days, 2026-08-31 to 2026-11-28"),
            (["range": "all"], nil, now, "all time, to 2026-11-28"),
            // A range that includes today ends now; one before it, at the end of its last day.
            (["since": "2026-11-01", "until": "2026-11-28"], today - 27 * 86_400, now, "2026-11-01 to 2026-11-28"),
            (
                ["since": "2026-11-01", "until": "2026-11-15"], today - 27 * 86_400, today - 12 * 86_400,
                "2026-11-01 to 2026-11-15"
            ),
            (["since": "2026-11-28", "until": "2026-11-28"], today, now, "2026-11-28"),
            (["since": "2024-02-29", "until": "2024-02-29"], 1_709_164_800, 1_709_251_200, "2024-02-29"),
        ]
        for (query, since, until, heading) in cases {
            let parsed = try range(query)
            #expect(parsed.since == since && parsed.until == until, "\(query)")
            #expect(parsed.heading == heading, "\(query): \(parsed.heading)")
        }
        #expect(
            try range([:]).preset == .last30Days
                && (try range(["since": "2026-11-01", "until": "2026-11-02"])).preset == nil
        )
    }

    /// Queries the report page refuses, each with the words it says why.
    static let badRanges: [(query: String, message: String)] = [
        ("range=14d", "range must be one of 7d, 30d, 90d, all"),
        ("range=", "range must be one of 7d, 30d, 90d, all"),
        ("range=7d&since=2026-11-01&until=2026-11-02", "Choose a preset range or two days"),
        ("since=2026-11-01", "needs both since and until"),
        ("until=2026-11-01", "needs both since and until"),
        ("since=yesterday&until=2026-11-01", "since must be a day written YYYY-MM-DD"),
        ("since=2026-11-01&until=2026-11-1", "until must be a day written YYYY-MM-DD"),
        ("since=2026-02-30&until=2026-03-01", "since must be a day written YYYY-MM-DD"),
        ("since=2026-11-01T00%3A00%3A00Z&until=2026-11-02", "since must be a day written YYYY-MM-DD"),
        ("since=%2B2026-11-01&until=2026-11-02", "since must be a day written YYYY-MM-DD"),
        ("since=&until=2026-11-02", "since must be a day written YYYY-MM-DD"),
        ("since=1969-12-31&until=1970-01-02", "since must be 1970-01-01 or later"),
        ("since=2026-11-20&until=2026-11-10", "since (2026-11-20) is after until (2026-11-10)"),
        ("since=2026-11-01&until=9999-12-31", "until (9999-12-31) is in the future"),
        ("since=9999-12-30&until=9999-12-31", "until (9999-12-31) is in the future"),
        ("from=2026-11-01", "unknown query parameter &#39;from&#39;; the parameters are range, since, until."),
        ("range=7d&range=30d", "range is given more than once"),
    ]

    @Test("a bad range is a 400 with its reason and the form, and nothing is read", arguments: badRanges)
    func reportBadRange(query: String, message: String) throws {
        let fixture = try Fixture()
        let (session, _) = try fixture.signIn(fixture.auditor)
        let page = try fixture.send("GET", "/report?" + query, cookies: ["console-session": session])
        #expect(page.status == 400)
        #expect(page.text.contains(message), "\(query)")
        #expect(page.text.contains("role=\"alert\"") && page.text.contains("Nothing was read."))
        #expect(
            page.text.contains("<input type=\"date\" id=\"since\"") && page.text.contains("href=\"/report?range=30d\"")
        )
        #expect(!page.text.contains("data-field") && !page.text.contains("<svg"), "no report computed for \(query)")
    }

    @Test("a range ending today is refused once it reaches tomorrow")
    func reportRangeTomorrow() throws {
        let now = Self.afternoon
        #expect(throws: ConsoleReportRange.Problem.self) {
            try ConsoleReportRange.parse(["since": "2026-11-28", "until": "2026-11-29"], now: now)
        }
        #expect(throws: ConsoleReportRange.Problem.self) {
            try ConsoleReportRange.parse(["since": "2026-11-29", "until": "2026-11-29"], now: now)
        }
        #expect(try ConsoleReportRange.parse(["since": "2026-11-28", "until": "2026-11-28"], now: now).until == now)
    }

    /// The `<svg>` of the chart `id` on a page.
    static func chart(_ id: String, in text: String) -> Substring {
        guard let start = text.range(of: "id=\"\(id)-title\"") else { return "" }
        let rest = text[start.upperBound...]
        return rest[..<(rest.range(of: "</svg>")?.lowerBound ?? rest.endIndex)]
    }

    static func count(_ needle: String, in text: Substring) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    @Test("each preset shows its window, the numbers ReportService gives for it, and a chart slot per day")
    func reportPresetsOverHTTP() throws {
        let fixture = try Fixture()
        let store = fixture.server.application.store
        let now = fixture.server.clock.now
        let today = now / 86_400
        // Conversions 3 days ago (two) and 40 days ago (one), from the audit trail as upgrades write them.
        try store.write { tx in
            for (daysAgo, count) in [(3, 2), (40, 1)] {
                for _ in 0..<count {
                    try tx.appendAudit(
                        AuditEvent(
                            at: (today - Int64(daysAgo)) * 86_400 + 3_600,
                            accountID: nil,
                            upgradeID: nil,
                            event: "account.convertedToApple",
                            detail: ["credentialKind": "password"]
                        )
                    )
                }
            }
        }
        let (session, _) = try fixture.signIn(fixture.auditor)
        let cases: [(query: String, days: Int64?, heading: String, conversionSlots: Int, remainingBars: Int)] = [
            ("", 30, "last 30 days", 30, 4),
            ("?range=7d", 7, "last 7 days", 7, 4),
            ("?range=30d", 30, "last 30 days", 30, 4),
            ("?range=90d", 90, "last 90 days", 90, 41),
            ("?range=all", nil, "all time", 41, 41),
        ]
        for (query, days, heading, conversionSlots, remainingBars) in cases {
            let page = try fixture.send("GET", "/report" + query, cookies: ["console-session": session])
            #expect(page.status == 200, "\(query)")
            let since = days.map { (today - ($0 - 1)) * 86_400 }
            let first = since.map { String(RFC3339.utc(seconds: $0).prefix(10)) }
            let last = String(RFC3339.utc(seconds: now).prefix(10))
            let expected = "<h1>Migration report, \(heading), " + (first.map { "\($0) to \(last)" } ?? "to \(last)")
            #expect(page.text.contains(expected + "</h1>"), "\(query): \(expected)")
            if let since {
                #expect(
                    page.text.contains("id=\"window-since\" datetime=\"\(RFC3339.utc(seconds: since))\""),
                    "\(query)"
                )
            } else {
                #expect(!page.text.contains("window-since") && page.text.contains("From the first event"), "\(query)")
            }
            #expect(page.text.contains("id=\"window-until\" datetime=\"\(RFC3339.utc(seconds: now))\""), "\(query)")
            let current = query.isEmpty ? "?range=30d" : query
            #expect(page.text.contains("href=\"/report\(current)\" aria-current=\"true\""), "\(query)")
            let report = try ReportService(store: store).report(since: since, until: now, now: now)
            #expect(page.text.contains("data-field=\"upgrades.total.started\">\(report.upgrades.total.started)<"))
            for (index, day) in report.accountsPerDay.enumerated() {
                #expect(page.text.contains("data-field=\"accountsPerDay.\(index).converted\">\(day.converted)<"))
            }
            #expect(Self.count("<rect", in: Self.chart("conversions", in: page.text)) == conversionSlots, "\(query)")
            #expect(Self.count("<rect", in: Self.chart("remaining", in: page.text)) == remainingBars, "\(query)")
            let threeDaysAgo = String(RFC3339.utc(seconds: (today - 3) * 86_400).dropFirst(5).prefix(5))
            #expect(Self.chart("conversions", in: page.text).contains("<title>\(threeDaysAgo): 2</title>"), "\(query)")
        }
        #expect(
            try fixture.send("GET", "/report?range=all", cookies: ["console-session": session]).text
                .contains(">All time (slow on large histories)</a>")
        )
    }

    @Test("the per-day charts: a slot for every day, conversions 0 on quiet days, the count carried from a change on")
    func reportChartDays() throws {
        let now = Self.afternoon
        let range = try ConsoleReportRange.parse(["range": "7d"], now: now)
        let days = [
            MigrationReport.AccountsDay(day: "2026-11-24", created: 0, converted: 3, deleted: 0, onPasswordsAtEnd: 10),
            MigrationReport.AccountsDay(day: "2026-11-26", created: 1, converted: 0, deleted: 0, onPasswordsAtEnd: 11),
        ]
        let chart = ConsoleRender.chartDays(days, range: range)
        #expect(chart.map(\.day) == (22...28).map { "2026-11-\($0)" })
        #expect(chart.map(\.converted) == [0, 0, 3, 0, 0, 0, 0])
        #expect(chart.map(\.onPasswordsAtEnd) == [nil, nil, 10, 10, 11, 11, 11])
        let all = ConsoleRender.chartDays(days, range: try ConsoleReportRange.parse(["range": "all"], now: now))
        #expect(all.first?.day == "2026-11-24" && all.count == 5)
        #expect(ConsoleRender.chartDays([], range: try ConsoleReportRange.parse(["range": "all"], now: now)).isEmpty)
        // Days typed from 1970 on draw from the first change, not 20,000 empty slots.
        let long = try ConsoleReportRange.parse(["since": "1970-01-01", "until": "2026-11-28"], now: now)
        #expect(ConsoleRender.chartDays(days, range: long).count == 5)
        #expect(ConsoleRender.chartDays([], range: long).count == Int(ConsoleRender.chartLeadingDaysLimit))
    }

    @Test("UPGRADE_CONSOLE_LISTEN: off by default, a numeric ADDRESS:PORT of its own, one clear line otherwise")
    func settings() throws {
        let probe = SettingsProbe()
        let load = probe.load
        let problems = probe.problems
        #expect(try load([:]).consoleListen == nil)
        let console = try load(["UPGRADE_CONSOLE_LISTEN": "10.0.0.5:8082"]).consoleListen
        #expect(console?.host == "10.0.0.5" && console?.port == 8082)
        for bad in ["8082", "localhost:8082", "127.0.0.1:65536", "127.0.0.1:"] {
            let found = problems(["UPGRADE_CONSOLE_LISTEN": bad])
            #expect(found.count == 1 && found[0].hasPrefix("UPGRADE_CONSOLE_LISTEN: expected a numeric ADDRESS:PORT"))
        }
        for taken in [
            ["UPGRADE_CONSOLE_LISTEN": "127.0.0.1:8080"],
            ["UPGRADE_CONSOLE_LISTEN": "127.0.0.1:8081", "UPGRADE_HEALTH_LISTEN": "127.0.0.1:8081"],
        ] {
            let found = problems(taken)
            #expect(found.count == 1 && found[0].hasPrefix("UPGRADE_CONSOLE_LISTEN: must differ from UPGRADE_LISTEN"))
        }
    }

    @Test("a console listener whose address is taken stops the other listeners again and names UPGRADE_CONSOLE_LISTEN")
    func consoleListenerAddressInUse() throws {
        let taken = try DevServer()
        let port = taken.application.server.port
        do {
            _ = try DevServer(environment: ["UPGRADE_CONSOLE_LISTEN": "127.0.0.1:\(port)"])
            Issue.record("started with a taken console address")
        } catch let failure as UpgradeApplication.StartFailure {
            #expect(failure.variable == "UPGRADE_CONSOLE_LISTEN")
        }
    }
}
