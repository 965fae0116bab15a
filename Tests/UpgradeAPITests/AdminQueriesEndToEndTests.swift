import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// `GET /v1/admin/audit` and `GET /v1/admin/accounts/{username}` over HTTP on loopback: the
/// `support` token has the `audit` and `accounts` scopes, the `backend` token only `tickets`.
@Suite("REST API end to end: audit search and the account overview")
struct AdminQueriesEndToEndTests {
    typealias Harness = TicketHarness

    func get(_ harness: Harness, _ path: String, token: String? = nil) async throws -> DevServer.Response {
        try await harness.server.send(
            "GET",
            path,
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(token ?? harness.supportToken)"]
        )
    }

    /// The request line exactly as written, so that a test controls every byte of the target.
    func rawGet(
        _ harness: Harness,
        _ target: String,
        method: String = "GET",
        token: String? = nil
    ) throws -> TestClient.Response {
        let client = try TestClient(port: harness.server.application.server.port)
        try client.send(
            "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token ?? harness.supportToken)\r\nConnection: close\r\n\r\n"
        )
        return try client.readResponse()
    }

    func events(_ response: DevServer.Response) -> [[String: Any]] {
        response.json["events"] as? [[String: Any]] ?? []
    }

    /// A ticket minted and spent, a password upgrade started and a wrong password: audit rows of
    /// several types and two accounts, every secret used along the way returned.
    func activity(_ harness: Harness) async throws -> [String] {
        let ticket = try await harness.ticket("plain")
        #expect(try await harness.upgrade("plain", ticket: ticket).status == 201)
        let started = try await harness.server.post("/v1/upgrades", DevServer.demoLogin)
        #expect(started.status == 201)
        let wrong = try await harness.server.post(
            "/v1/upgrades",
            ["username": "plain", "password": "not-the-password", "serviceIdentifier": "s"]
        )
        #expect(wrong.status == 401)
        return [
            ticket, "pw-plain", "not-the-password", DevelopmentEnvironment.demoPassword,
            DevelopmentEnvironment.demoTOTPSecretBase32, "$argon2id$",
        ]
    }

    @Test("search: newest first, each filter, cursor pages without duplicates or gaps", arguments: Backend.all)
    func search(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let secrets = try await activity(harness)
        let all = try await get(harness, "/v1/admin/audit?limit=1000")
        #expect(all.status == 200, "\(String(decoding: all.body, as: UTF8.self))")
        #expect(all.headers["cache-control"] == "no-store")
        #expect(all.headers["content-type"] == "application/json")
        #expect(all.json["nextCursor"] == nil)
        let rows = events(all)
        let ids = rows.compactMap { $0["id"] as? Int }
        #expect(ids.count == rows.count && ids.count >= 5 && ids == ids.sorted(by: >), "\(rows)")
        #expect(rows.contains { $0["event"] as? String == "ticket.issued" })
        #expect(rows.allSatisfy { ($0["at"] as? String)?.hasSuffix("Z") == true && $0["detail"] is [String: Any] })

        // account= takes a username, in any form Username maps to the stored one.
        let plain = events(try await get(harness, "/v1/admin/audit?account=PLAIN"))
        let plainID = try #require(plain.first?["accountId"] as? String)
        #expect(plain.allSatisfy { $0["accountId"] as? String == plainID })
        #expect(
            plain.map { $0["id"] as? Int }
                == rows.filter { $0["accountId"] as? String == plainID }.map { $0["id"] as? Int }
        )
        let tickets = events(try await get(harness, "/v1/admin/audit?type=ticket.issued"))
        #expect(tickets.count == 1 && tickets[0]["accountId"] as? String == plainID)
        let now = harness.server.clock.now
        #expect(events(try await get(harness, "/v1/admin/audit?since=\(now)")).count == rows.count)
        #expect(events(try await get(harness, "/v1/admin/audit?since=\(now + 1)")).isEmpty, "since is inclusive")
        #expect(events(try await get(harness, "/v1/admin/audit?until=\(now)")).isEmpty, "until is exclusive")
        let rfc = RFC3339Text.utc(now + 1)
        #expect(events(try await get(harness, "/v1/admin/audit?until=\(rfc)")).count == rows.count)

        // Pages of two, following nextCursor: the whole answer, once, in order.
        var collected: [Int] = []
        var path = "/v1/admin/audit?limit=2"
        var pages = 0
        while true {
            let page = try await get(harness, path)
            #expect(page.status == 200)
            collected += events(page).compactMap { $0["id"] as? Int }
            pages += 1
            guard let cursor = page.json["nextCursor"] as? String, pages < 50 else { break }
            path = "/v1/admin/audit?limit=2&cursor=\(cursor)"
        }
        #expect(collected == ids)
        #expect(pages == (ids.count + 1) / 2)
        harness.expectNoSecrets(secrets, bodies: [all])
    }

    @Test("search: 422 naming the parameter, 404 for an unknown account, 401, 401, 403", arguments: Backend.all)
    func searchFailures(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        var answers: [DevServer.Response] = []
        for (query, named) in [
            ("since=yesterday", "since"), ("until=2026-11-24", "until"), ("limit=0", "limit"),
            ("limit=1001", "limit"), ("limit=ten", "limit"), ("cursor=AAAAAAAAAAA", "cursor"),
            ("cursor=zz", "cursor"), ("bogus=1", "bogus"), ("type=a&type=b", "type"),
            // The base64url of an existing event's id (2): well formed, but not a cursor we issued.
            ("cursor=AAAAAAAAAAI", "cursor"),
            ("account=%E2%80%8B", "account"), ("account=%FF", "account"),
        ] {
            let answer = try await get(harness, "/v1/admin/audit?\(query)")
            #expect(answer.status == 422 && answer.problem == "validation", "\(query): \(answer.status)")
            #expect((answer["detail"] ?? "").contains(named), "\(query): \(answer["detail"] ?? "")")
            answers.append(answer)
        }
        // Percent-encodings that are well formed but not UTF-8 (a malformed `%` is the HTTP
        // parser's 400 invalid-target before any route sees it).
        for (query, named) in [("account=a%C3", "account"), ("since=%FF", "since"), ("type=%C3%28", "type")] {
            let answer = try rawGet(harness, "/v1/admin/audit?\(query)")
            #expect(answer.status == 422 && answer.problemSlug == "validation", "\(query): \(answer.status)")
            #expect(answer.text.contains(named), "\(query): \(answer.text)")
        }
        let unknown = try await get(harness, "/v1/admin/audit?account=nobody")
        #expect(unknown.status == 404 && unknown.problem == "account-not-found")

        let missing = try await harness.server.get("/v1/admin/audit")
        #expect(missing.status == 401 && missing.problem == "unauthorized")
        #expect(missing.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        let wrong = try await get(harness, "/v1/admin/audit", token: AdminToken.generate())
        #expect(wrong.status == 401 && wrong.problem == "unauthorized")
        #expect(wrong.headers["www-authenticate"]?.contains("invalid_token") == true)
        let scope = try await get(harness, "/v1/admin/audit?bogus=1", token: harness.backendToken)
        #expect(scope.status == 403 && scope.problem == "insufficient-scope", "the token is checked first")
        #expect(scope.headers["www-authenticate"]?.contains("scope=\"audit\"") == true)
        harness.expectNoSecrets([], bodies: answers + [unknown, missing, wrong, scope])
    }

    @Test("account overview: credentials as facts, open upgrades, last events, nothing secret", arguments: Backend.all)
    func overview(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let secrets = try await activity(harness)
        let demo = try await get(harness, "/v1/admin/accounts/\(DevelopmentEnvironment.demoUsername)")
        #expect(demo.status == 200, "\(String(decoding: demo.body, as: UTF8.self))")
        #expect(demo.headers["cache-control"] == "no-store")
        let json = demo.json
        #expect(json["username"] as? String == DevelopmentEnvironment.demoUsername)
        #expect(json["credentialKind"] as? String == "password")
        #expect(json["password"] as? Bool == true && json["totp"] as? Bool == true)
        #expect(json["recoveryCodesLeft"] is Int && json["createdAt"] is String && json["id"] is String)
        #expect((json["apple"] as? [String: Any])?["linked"] as? Bool == false)
        #expect((json["apple"] as? [String: Any])?["sub"] == nil)
        let open = try #require(json["openUpgrades"] as? [[String: Any]])
        #expect(open.count == 1 && open[0]["status"] as? String == "stepUpRequired" && open[0]["expiresAt"] is String)
        let last = try #require(json["lastEvents"] as? [[String: Any]])
        #expect(!last.isEmpty && last.count <= 20)
        #expect(last.allSatisfy { $0["accountId"] as? String == json["id"] as? String })

        // After an upgrade: Apple-only, linked, the credential state Apple's API would answer.
        let ticket = try await harness.ticket("plain")
        let started = try await harness.upgrade("plain", ticket: ticket)
        let completed = try await harness.server.post(
            "/v1/upgrades/\(try #require(started["id"]))/apple-credential",
            try harness.server.appleCredential(for: started)
        )
        #expect(completed["status"] == "completed")
        let plain = try await get(harness, "/v1/admin/accounts/plain")
        let apple = try #require(plain.json["apple"] as? [String: Any])
        #expect(plain.json["credentialKind"] as? String == "appleOnly" && plain.json["password"] as? Bool == false)
        #expect(apple["linked"] as? Bool == true && apple["status"] as? String == "linked")
        #expect((apple["sub"] as? String)?.isEmpty == false)
        #expect(apple["credentialState"] as? String == "authorized" && apple["linkedAt"] is String)
        #expect((plain.json["openUpgrades"] as? [Any])?.isEmpty == true)
        harness.expectNoSecrets(secrets + [ticket], bodies: [demo, plain])
        for body in [demo, plain] {
            let text = String(decoding: body.body, as: UTF8.self)
            for field in ["hash", "secret", "refreshToken", "ciphertext"] { #expect(!text.contains(field)) }
        }
    }

    @Test("account overview: the email and display name an import brought, absent when none", arguments: Backend.all)
    func overviewProfile(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let store = harness.server.application.store
        let hash = "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"
        let text = """
            {"username":"imported","passwordHash":"\(hash)","email":"imported@example.com","displayName":"Ïm Ported"}
            {"username":"bare","passwordHash":"\(hash)"}
            """
        var reader = ImportReader(bytes: Array(text.utf8), format: .jsonl)
        let summary = try AccountImporter(store: store, options: AccountImportOptions(runID: "run", source: "test"))
            .run(&reader, now: { harness.server.clock.now })
        #expect(summary.created == 2)

        let imported = try await get(harness, "/v1/admin/accounts/imported")
        #expect(imported.status == 200, "\(String(decoding: imported.body, as: UTF8.self))")
        #expect(imported.json["email"] as? String == "imported@example.com")
        #expect(imported.json["displayName"] as? String == "Ïm Ported")
        for username in ["bare", "plain"] {
            let answer = try await get(harness, "/v1/admin/accounts/\(username)")
            #expect(answer.status == 200)
            #expect(answer.json["email"] == nil && answer.json["displayName"] == nil, "\(username)")
        }

        let id = try #require(imported.json["id"] as? String)
        let deleted = try await harness.server.send(
            "DELETE",
            "/v1/admin/accounts/imported",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(harness.supportToken)"]
        )
        #expect(deleted.status == 200, "\(String(decoding: deleted.body, as: UTF8.self))")
        #expect(try store.read { try $0.accountProfile(accountID: id) } == nil, "the profile went with the account")
    }

    @Test("account overview: any username in the path, 404 unknown, 401, 401, 403; GET beside other methods")
    func overviewPaths() async throws {
        let harness = try Harness(.sqlite)
        try harness.server.addAccount("carol.o'neil@example.com", password: "pw-carol")
        for path in ["carol.o'neil@example.com", "carol.o%27neil%40example.com", "CAROL.O'NEIL@EXAMPLE.COM"] {
            let found = try await get(harness, "/v1/admin/accounts/\(path)")
            #expect(found.status == 200 && found.json["username"] as? String == "carol.o'neil@example.com", "\(path)")
        }
        let accented = "jos\u{e9}"
        try harness.server.addAccount(accented, password: "pw-jose")
        let encoded = try #require(accented.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        #expect(try await get(harness, "/v1/admin/accounts/\(encoded)").json["username"] as? String == accented)

        let unknown = try await get(harness, "/v1/admin/accounts/nobody")
        #expect(unknown.status == 404 && unknown.problem == "account-not-found")
        for bad in ["a%E2%80%8Bb", "a%C3", "a%FF", "%C0%AF"] {
            let invalid = try rawGet(harness, "/v1/admin/accounts/\(bad)")
            #expect(invalid.status == 422 && invalid.problemSlug == "validation", "\(bad): \(invalid.status)")
            // DELETE decodes the path as strictly, and only once the token is checked.
            let delete = try rawGet(harness, "/v1/admin/accounts/\(bad)", method: "DELETE")
            #expect(delete.status == 422 && delete.problemSlug == "validation", "DELETE \(bad): \(delete.status)")
            let stranger = try rawGet(harness, "/v1/admin/accounts/\(bad)", method: "DELETE", token: "wrong")
            #expect(stranger.status == 401 && stranger.problemSlug == "unauthorized", "DELETE \(bad)")
        }
        let invalid = try await get(harness, "/v1/admin/accounts/a%E2%80%8Bb")
        let missing = try await harness.server.get("/v1/admin/accounts/plain")
        #expect(missing.status == 401 && missing.problem == "unauthorized")
        let wrong = try await get(harness, "/v1/admin/accounts/plain", token: AdminToken.generate())
        #expect(wrong.status == 401 && wrong.problem == "unauthorized")
        let scope = try await get(harness, "/v1/admin/accounts/plain", token: harness.backendToken)
        #expect(scope.status == 403 && scope.problem == "insufficient-scope")
        let other = try await harness.server.post("/v1/admin/accounts/plain", [:])
        #expect(other.status == 405 && other.headers["allow"] == "GET, HEAD, DELETE, PUT")
        // DELETE on the same path takes the same usernames: gone, the GET says so.
        let deleted = try await harness.server.send(
            "DELETE",
            "/v1/admin/accounts/carol.o%27neil@example.com",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(harness.supportToken)"]
        )
        #expect(deleted.status == 200, "\(String(decoding: deleted.body, as: UTF8.self))")
        let gone = try await get(harness, "/v1/admin/accounts/carol.o'neil@example.com")
        #expect(gone.status == 404 && gone.problem == "account-not-found")
        harness.expectNoSecrets(["pw-carol", "pw-jose"], bodies: [unknown, invalid, missing, wrong, scope])
    }
}

/// RFC 3339 as a client would write it, independent of the server's formatter.
enum RFC3339Text {
    static func utc(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
