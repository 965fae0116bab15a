import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeAPI
@testable import UpgradeEngine

/// The support console's sessions live in the database (docs/architecture.md §7.8): every instance
/// on it sees the same ones, a restart keeps them, and the rows hold nothing a reader of the database
/// could sign in or post a form with.
@Suite("Support console sessions in the database")
struct ConsoleSessionTests {
    typealias Fixture = ConsoleTests.Fixture

    /// The row of the session `id` names, expired or not.
    static func row(_ id: String, in fixture: Fixture) throws -> ConsoleSessionRecord? {
        try fixture.server.application.store.read { try $0.consoleSession(hash: ConsoleSessions.hash(id), now: 0) }
    }

    @Test(
        "a session signed in on one instance works on another, and signing out there ends it on both",
        arguments: Backend.all
    )
    func sharedBetweenInstances(_ backend: Backend) throws {
        let a = try Fixture(backend)
        let b = try a.another()
        try a.server.addAccount("victim", password: "pw-victim")
        try a.server.addAccount("spared", password: "pw-spared")
        let (session, csrf) = try a.signIn(a.support)
        let cookies = ["console-session": session]

        let page = try b.send("GET", "/jobs", cookies: cookies)
        #expect(page.status == 200 && Fixture.csrf(in: page) == csrf, "the same session and form token on B")
        let deleted = try b.send(
            "POST",
            "/accounts/delete",
            cookies: cookies,
            form: [("username", "victim"), ("confirm", "victim"), ("csrf", csrf)]
        )
        #expect(deleted.status == 200 && deleted.text.contains("The account victim was deleted."))
        #expect(try !a.accountExists("victim"))

        let out = try b.send("POST", "/sign-out", cookies: cookies, form: [("csrf", csrf)])
        #expect(out.status == 303 && Fixture.cookie("console-session", in: out) == "")
        for fixture in [a, b] {
            let after = try fixture.send("GET", "/jobs", cookies: cookies)
            #expect(after.status == 303 && after.header("Location") == "/")
            let posted = try fixture.send(
                "POST",
                "/accounts/delete",
                cookies: cookies,
                form: [("username", "spared"), ("confirm", "spared"), ("csrf", csrf)]
            )
            #expect(posted.status == 403)
        }
        #expect(try a.accountExists("spared"))
        #expect(try Self.row(session, in: a) == nil)
    }

    @Test("a session survives a restart of its instance", arguments: Backend.all)
    func survivesRestart(_ backend: Backend) throws {
        var first: Fixture? = try Fixture(backend)
        let (session, csrf) = try first!.signIn(first!.support)
        let (tokens, database) = (first!.tokens, first!.server.database)
        first = nil  // stops the instance; the database and the token file stay
        let restarted = try Fixture(tokens: tokens, database: database)
        let cookies = ["console-session": session]
        let page = try restarted.send("GET", "/jobs", cookies: cookies)
        #expect(page.status == 200 && Fixture.csrf(in: page) == csrf)
        let out = try restarted.send("POST", "/sign-out", cookies: cookies, form: [("csrf", csrf)])
        #expect(out.status == 303)
        #expect(try restarted.send("GET", "/jobs", cookies: cookies).status == 303)
    }

    @Test("an expired session is refused on every instance, and its row is purged at the next sign-in")
    func expiredIsRefusedAndPurged() throws {
        let a = try Fixture()
        let b = try a.another()
        let expired = try a.signIn(a.support)
        b.server.clock.advance(ConsoleSessions.lifetime)
        #expect(try b.send("GET", "/jobs", cookies: ["console-session": expired.session]).status == 303)
        let posted = try b.send(
            "POST",
            "/sign-out",
            cookies: ["console-session": expired.session],
            form: [("csrf", expired.csrf)]
        )
        #expect(posted.status == 403)
        // Refused, not yet deleted: the next sign-in deletes it.
        #expect(try Self.row(expired.session, in: a) != nil)
        let fresh = try b.signIn(b.auditor)
        #expect(try Self.row(expired.session, in: a) == nil)
        #expect(try Self.row(fresh.session, in: a) != nil)
        // A's clock is 15 minutes behind B's, so the fresh session lives there too.
        #expect(try a.send("GET", "/report", cookies: ["console-session": fresh.session]).status == 200)
    }

    @Test(
        "the database holds neither the session id, nor the form token, nor the admin token",
        arguments: Backend.all
    )
    func nothingUsableStored(_ backend: Backend) throws {
        let fixture = try Fixture(backend)
        let (session, csrf) = try fixture.signIn(fixture.support)
        let store = fixture.server.application.store
        let rows = try store.read { tx in
            try (tx as! any SQLTransaction).rows("SELECT * FROM console_sessions")
        }
        #expect(rows.count == 1)
        let stored = rows.flatMap { $0 }.map { value -> String in
            switch value {
            case .text(let text): text
            case .blob(let bytes): bytes.hexString + String(decoding: bytes, as: UTF8.self)
            case .integer(let number): "\(number)"
            case .null: ""
            }
        }.joined(separator: " ")
        #expect(stored.contains(ConsoleSessions.hash(session)), "keyed by the id's hash")
        let secrets = [session, csrf, fixture.support, Base64URL.encode(Digest.sha256(session))]
        for secret in secrets {
            #expect(!stored.contains(secret))
            #expect(!stored.lowercased().contains(secret.lowercased()))
        }
        // SQLite: not in any byte of the files either (the database and its write-ahead log).
        if backend == .sqlite {
            let path = String(fixture.server.database.url.dropFirst("sqlite:".count))
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
                for secret in [session, csrf, fixture.support] {
                    #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file)")
                }
            }
        }
    }

    @Test(
        "someone who writes the database can neither make a session of a copied row nor lengthen one",
        arguments: Backend.all
    )
    func rowsCannotBeForged(_ backend: Backend) throws {
        let fixture = try Fixture(backend)
        let (session, _) = try fixture.signIn(fixture.support)
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": session]).status == 200)
        let stored = try #require(try Self.row(session, in: fixture))
        let store = fixture.server.application.store

        // The row copied under an id of the writer's choosing: refused, and the copy deleted.
        let chosen = SecureRandom.token(byteCount: 32)
        var copy = stored
        copy.hash = ConsoleSessions.hash(chosen)
        try store.write { try $0.insertConsoleSession(copy) }
        let minted = try fixture.send("GET", "/jobs", cookies: ["console-session": chosen])
        #expect(minted.status == 303 && minted.header("Location") == "/")
        #expect(try Self.row(chosen, in: fixture) == nil)

        // The real session still works until its row is given a later end.
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": session]).status == 200)
        try store.write { tx in
            try (tx as! any SQLTransaction).send(
                "UPDATE console_sessions SET expires_at = expires_at + 86400 WHERE session_hash = $1",
                [.text(stored.hash)]
            )
        }
        #expect(try fixture.send("GET", "/jobs", cookies: ["console-session": session]).status == 303)
        #expect(try Self.row(session, in: fixture) == nil)
    }

    @Test("while the database is down the console answers its error page, never a signed-in one, and changes nothing")
    func databaseDown() throws {
        let database = try ServerDatabase(.sqlite)
        let real = try DatabaseLocation.parse(database.url).open()
        _ = try real.migrate(now: 0)
        let store = OutageStore(real)
        let tokens = try ConsoleTests.Tokens()
        let handler = ConsoleHandler(
            store: store,
            adminTokens: Reloadable(try AdminTokenFile.load(path: tokens.path)),
            secureCookies: false,
            log: RequestLog(write: { _ in })
        )
        func send(_ method: String, _ target: String, cookies: String = "", form: String = "") throws -> HTTPResponse {
            var headers: HTTPHeaders = ["Host": "127.0.0.1"]
            if !cookies.isEmpty { headers.append(name: "Cookie", value: cookies) }
            return try handler.handle(
                HTTPRequest(
                    head: HTTPRequestHead(method: method, target: target, version: .http1_1, headers: headers),
                    body: Array(form.utf8)
                )
            )
        }
        func cookie(_ name: String, _ response: HTTPResponse) -> String? {
            response.headers.values(for: "Set-Cookie").first { $0.hasPrefix(name + "=") }.map {
                String($0.dropFirst(name.count + 1).prefix { $0 != ";" })
            }
        }
        let signInToken = try #require(cookie("console-sign-in", try send("GET", "/")))
        let signedIn = try send(
            "POST",
            "/sign-in",
            cookies: "console-sign-in=\(signInToken)",
            form: "token=\(tokens.support)&csrf=\(signInToken)"
        )
        let session = try #require(cookie("console-session", signedIn))
        let csrf = ConsoleSessions.formToken(id: session)
        #expect(try send("GET", "/jobs", cookies: "console-session=\(session)").status == 200)

        store.down.store(true, ordering: .relaxed)
        let answers = [
            try send("GET", "/jobs", cookies: "console-session=\(session)"),
            try send("GET", "/", cookies: "console-session=\(session)"),
            try send("POST", "/sign-out", cookies: "console-session=\(session)", form: "csrf=\(csrf)"),
            try send(
                "POST",
                "/sign-in",
                cookies: "console-sign-in=\(signInToken)",
                form: "token=\(tokens.support)&csrf=\(signInToken)"
            ),
        ]
        for answer in answers {
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(answer.status == 503 && answer.headers["Retry-After"] == "2")
            #expect(text.contains("the database cannot be reached"))
            #expect(!text.contains("/sign-out") && !text.contains("name=\"csrf\""), "not a signed-in page")
            #expect(answer.headers.values(for: "Set-Cookie").isEmpty)
        }
        #expect(try send("GET", "/console.css").status == 200, "the stylesheet needs no database")

        store.down.store(false, ordering: .relaxed)
        #expect(
            try send("GET", "/jobs", cookies: "console-session=\(session)").status == 200,
            "the session outlived it"
        )
    }
}

/// A store whose database can be made unreachable: every transaction then fails as PostgreSQL's
/// does when its server is gone (`unavailable`).
final class OutageStore: UpgradeStore {
    let base: any UpgradeStore
    let down = Atomic<Bool>(false)

    init(_ base: any UpgradeStore) { self.base = base }

    private func check() throws(StorageError) {
        if down.load(ordering: .relaxed) { throw StorageError(.unavailable, "connection refused") }
    }

    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
    func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try check()
        return try base.write(body)
    }
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try check()
        return try base.read(body)
    }
    func ping() throws(StorageError) {
        try check()
        try base.ping()
    }
}
