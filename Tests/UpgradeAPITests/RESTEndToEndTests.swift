import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// The upgrade over HTTP on loopback against the development server and its Apple emulator. The
/// flows that store something run on every backend (`Backend.all`).
@Suite("REST API end to end")
struct RESTEndToEndTests {
    @Test(
        "with TOTP: password, step-up, Apple credential, completed; then the password is refused",
        arguments: Backend.all
    )
    func happyPathWithTOTP(_ backend: Backend) async throws {
        let server = try DevServer(backend)
        let started = try await server.post("/v1/upgrades", DevServer.demoLogin)
        #expect(started.status == 201)
        #expect(started["status"] == "stepUpRequired")
        #expect(started["result"] == "twoFactorAuthRequired")
        #expect(started["state"] == nil)
        let id = try #require(started["id"])

        let stepped = try await server.post("/v1/upgrades/\(id)/step-up", ["code": server.totpCode()])
        #expect(stepped.status == 200)
        #expect(stepped["status"] == "awaitingAppleCredential")
        #expect(stepped["result"] == "success")
        #expect(stepped["state"] != nil && stepped["nonce"] != nil)
        #expect(stepped.headers["cache-control"] == "no-store")

        let completed = try await server.post(
            "/v1/upgrades/\(id)/apple-credential",
            try server.appleCredential(for: stepped)
        )
        #expect(completed.status == 200)
        #expect(completed["status"] == "completed")
        #expect(completed["result"] == "success")
        #expect(completed["accountId"] != nil)

        let again = try await server.post("/v1/upgrades", DevServer.demoLogin)
        #expect(again.status == 401)
        #expect(again.problem == "invalid-credentials")
        #expect(again["result"] == "failure")
        #expect(again.headers["content-type"] == "application/problem+json")

        let view = try await server.get("/v1/upgrades/\(id)")
        #expect(view["status"] == "completed")
    }

    @Test("without TOTP: the first answer already carries state and nonce", arguments: Backend.all)
    func happyPathWithoutTOTP(_ backend: Backend) async throws {
        let server = try DevServer(backend)
        try server.addAccount("plain", password: "pw-plain")
        let started = try await server.post(
            "/v1/upgrades",
            ["username": "plain", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(started.status == 201)
        #expect(started["status"] == "awaitingAppleCredential")
        let id = try #require(started["id"])
        let credential = try server.appleCredential(for: started)
        let completed = try await server.post("/v1/upgrades/\(id)/apple-credential", credential)
        #expect(completed["status"] == "completed")
        // The extension retries its last call: the same answer, nothing changes.
        let retried = try await server.post("/v1/upgrades/\(id)/apple-credential", credential)
        #expect(retried.status == 200)
        #expect(retried.body == completed.body)
    }

    @Test("a look-alike username signs in over HTTP; one the username profile refuses is a 422 naming the code point")
    func lookAlikeUsernames() async throws {
        let server = try DevServer()
        try server.addAccount("plain", password: "pw-plain")
        let fullwidth = try await server.post(
            "/v1/upgrades",
            ["username": "\u{FF30}\u{FF4C}\u{FF41}\u{FF49}\u{FF4E}", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(fullwidth.status == 201)
        #expect(fullwidth["status"] == "awaitingAppleCredential")
        let hidden = try await server.post(
            "/v1/upgrades",
            ["username": "pl\u{AD}ain", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(hidden.status == 422)
        #expect(hidden.problem == "validation")
        #expect(hidden["result"] == "failure")
        #expect(hidden["detail"]?.contains("U+00AD SOFT HYPHEN") == true, "\(hidden.body)")
        // Mixed scripts (a Cyrillic а): refused for the string alone, like any name the rule refuses.
        let mixed = try await server.post(
            "/v1/upgrades",
            ["username": "pl\u{430}in", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(mixed.status == 422)
        #expect(mixed.problem == "validation")
        #expect(
            mixed["detail"]?.contains("mixes scripts Latin and Cyrillic (U+0430 CYRILLIC SMALL LETTER A)") == true,
            "\(mixed.body)"
        )
        // A look-alike in one script is a valid name that no account has: the unknown-user answer.
        let alpha = try await server.post(
            "/v1/upgrades",
            ["username": "pl\u{251}in", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(alpha.status == 401)
        #expect(alpha.problem == "invalid-credentials")
    }

    enum Branch: String, CaseIterable, Sendable {
        case wrongPassword, locked, wrongCode, replayedCode, stateMismatch, nonceMismatch, expired, otherAudience,
            subLinked, cancelled
    }

    @Test("each failure branch answers its problem and result", arguments: Backend.all, Branch.allCases)
    func failureBranch(_ backend: Backend, _ branch: Branch) async throws {
        let server = try DevServer(backend)
        try server.addAccount("plain", password: "pw-plain")
        let plainLogin: [String: any Sendable] = [
            "username": "plain", "password": "pw-plain", "serviceIdentifier": "s",
        ]
        switch branch {
        case .wrongPassword:
            let answer = try await server.post(
                "/v1/upgrades",
                ["username": "plain", "password": "nope", "serviceIdentifier": "s"]
            )
            #expect(answer.status == 401)
            #expect(answer.problem == "invalid-credentials")
            #expect(answer["result"] == "failure")
            #expect(answer["upgradeStatus"] == "failed")
            let unknown = try await server.post(
                "/v1/upgrades",
                ["username": "nobody", "password": "nope", "serviceIdentifier": "s"]
            )
            #expect(
                unknown.status == answer.status && unknown.problem == answer.problem
                    && unknown["detail"] == answer["detail"]
            )

        case .locked:
            // Failures spaced past the growing delays until the username locks (known or not alike).
            for _ in 0..<10 {
                _ = try await server.post(
                    "/v1/upgrades",
                    ["username": "plain", "password": "nope", "serviceIdentifier": "s"]
                )
                _ = try await server.post(
                    "/v1/upgrades",
                    ["username": "ghost", "password": "nope", "serviceIdentifier": "s"]
                )
                server.clock.advance(61)
            }
            let known = try await server.post("/v1/upgrades", plainLogin)
            let ghost = try await server.post(
                "/v1/upgrades",
                ["username": "ghost", "password": "pw-plain", "serviceIdentifier": "s"]
            )
            #expect(known.status == 429)
            #expect(known.problem == "locked")
            #expect(ghost.problem == "locked")
            #expect(known.headers["retry-after"] != nil)
            #expect(known.headers["retry-after"] == ghost.headers["retry-after"])

        case .wrongCode:
            let started = try await server.post("/v1/upgrades", DevServer.demoLogin)
            let id = try #require(started["id"])
            let wrong = try await server.post("/v1/upgrades/\(id)/step-up", ["code": "12345x"])
            #expect(wrong.status == 401)
            #expect(wrong.problem == "invalid-code")
            #expect(wrong["result"] == "twoFactorAuthRequired")
            #expect(wrong.json["attemptsRemaining"] as? Int == 4)

        case .replayedCode:
            let code = server.totpCode()
            let first = try await server.post("/v1/upgrades", DevServer.demoLogin)
            _ = try await server.post("/v1/upgrades/\(try #require(first["id"]))/step-up", ["code": code])
            let second = try await server.post("/v1/upgrades", DevServer.demoLogin)
            let replay = try await server.post("/v1/upgrades/\(try #require(second["id"]))/step-up", ["code": code])
            #expect(replay.status == 401)
            #expect(replay.problem == "invalid-code")

        case .stateMismatch, .nonceMismatch, .otherAudience:
            let started = try await server.post("/v1/upgrades", plainLogin)
            let id = try #require(started["id"])
            var credential: [String: any Sendable]
            switch branch {
            case .stateMismatch:
                credential = try server.appleCredential(for: started)
                credential["state"] = "forged-" + SecureRandom.token()
            case .nonceMismatch:
                var other = started.json
                other["nonce"] = "another-nonce"
                let forged = DevServer.Response(
                    status: 201,
                    body: try JSONSerialization.data(withJSONObject: other),
                    headers: [:]
                )
                credential = try server.appleCredential(for: forged)
            default:
                try server.development.emulator.addApp(clientID: "com.other.app", teamID: DevelopmentEnvironment.teamID)
                credential = try server.appleCredential(for: started, clientID: "com.other.app")
            }
            let answer = try await server.post("/v1/upgrades/\(id)/apple-credential", credential)
            let expected = [
                "stateMismatch": "state-mismatch", "nonceMismatch": "nonce-mismatch",
                "otherAudience": "invalid-identity-token",
            ]
            #expect(answer.status == 400)
            #expect(answer.problem == expected[branch.rawValue])
            #expect(answer["upgradeStatus"] == "failed")

        case .expired:
            let started = try await server.post("/v1/upgrades", plainLogin)
            let id = try #require(started["id"])
            let credential = try server.appleCredential(for: started)
            server.clock.advance(301)
            let answer = try await server.post("/v1/upgrades/\(id)/apple-credential", credential)
            #expect(answer.status == 410)
            #expect(answer.problem == "upgrade-expired")

        case .subLinked:
            try server.addAccount("second", password: "pw-2")
            let first = try await server.post("/v1/upgrades", plainLogin)
            _ = try await server.post(
                "/v1/upgrades/\(try #require(first["id"]))/apple-credential",
                try server.appleCredential(for: first)
            )
            let second = try await server.post(
                "/v1/upgrades",
                ["username": "second", "password": "pw-2", "serviceIdentifier": "s"]
            )
            let answer = try await server.post(
                "/v1/upgrades/\(try #require(second["id"]))/apple-credential",
                try server.appleCredential(for: second)
            )
            #expect(answer.status == 409)
            #expect(answer.problem == "sub-conflict")

        case .cancelled:
            let started = try await server.post("/v1/upgrades", plainLogin)
            let id = try #require(started["id"])
            let cancelled = try await server.post("/v1/upgrades/\(id)/cancel", ["reason": "userCanceled"])
            #expect(cancelled.status == 200)
            #expect(cancelled["status"] == "cancelled")
            #expect(cancelled["result"] == "failure")
            let numeric = try await server.post("/v1/upgrades/\(id)/cancel", ["reason": 1])
            #expect(numeric["status"] == "cancelled")
            let late = try await server.post(
                "/v1/upgrades/\(id)/apple-credential",
                try server.appleCredential(for: started)
            )
            #expect(late.status == 409)
            #expect(late.problem == "not-allowed-in-state")
            let bad = try await server.post("/v1/upgrades/\(id)/cancel", ["reason": "because"])
            #expect(bad.status == 422)
        }
    }

    @Test("bad requests get specific problems and change nothing")
    func badRequests() async throws {
        let server = try DevServer()
        let wrongType = try await server.send("POST", "/v1/upgrades", body: Data("{}".utf8), contentType: "text/plain")
        #expect(wrongType.status == 415)
        let login = try JSONSerialization.data(withJSONObject: DevServer.demoLogin)
        for charset in ["utf-16", "\"ISO-8859-1\"", "UTF-32BE"] {
            let refused = try await server.send(
                "POST",
                "/v1/upgrades",
                body: login,
                contentType: "application/json; charset=\(charset)"
            )
            #expect(refused.status == 415 && refused.problem == "unsupported-media-type", "charset=\(charset)")
        }
        let notJSON = try await server.send(
            "POST",
            "/v1/upgrades",
            body: Data("{".utf8),
            contentType: "application/json"
        )
        #expect(notJSON.status == 400)
        #expect(notJSON.problem == "bad-request")
        let duplicate = try await server.send(
            "POST",
            "/v1/upgrades",
            body: Data(#"{"username":"a","username":"b"}"#.utf8),
            contentType: "application/json"
        )
        #expect(duplicate.status == 400)
        let unknownField = try await server.post(
            "/v1/upgrades",
            ["username": "demo", "password": "x", "serviceIdentifier": "s", "admin": true]
        )
        #expect(unknownField.status == 422)
        #expect(unknownField.problem == "validation")
        let wrongFieldType = try await server.post(
            "/v1/upgrades",
            ["username": 1, "password": "x", "serviceIdentifier": "s"]
        )
        #expect(wrongFieldType.status == 422)
        let missing = try await server.get("/v1/upgrades/upg_missing")
        #expect(missing.status == 404)
        let badID = try await server.get("/v1/upgrades/%00")
        #expect(badID.status == 404)
        let method = try await server.send("PUT", "/v1/upgrades", body: nil, contentType: nil)
        #expect(method.status == 405)
        #expect(method.headers["allow"] == "POST")
        // HEAD is GET without the body: the same status and headers, the body's length included.
        let view = try await server.get("/v1/upgrades/upg_missing")
        let head = try await server.send("HEAD", "/v1/upgrades/upg_missing", body: nil, contentType: nil)
        #expect(head.status == 404 && head.body.isEmpty)
        #expect(head.headers["content-length"] == String(view.body.count))
        #expect(head.headers["content-type"] == view.headers["content-type"])
        let health = try await server.send("HEAD", "/healthz", body: nil, contentType: nil)
        #expect(health.status == 200 && health.body.isEmpty)
        // Answered on the event loop, as GET is: neither logged nor counted.
        #expect(!server.logs.lines.withLock { $0 }.contains { $0.contains("\"route\":\"/healthz\"") })
        let headOfPost = try await server.send("HEAD", "/v1/upgrades", body: nil, contentType: nil)
        #expect(headOfPost.status == 405 && headOfPost.headers["allow"] == "POST")
        // None of that created an upgrade or counted a failure for the demo user.
        let throttle = try server.application.store.read { try $0.throttle(usernameKey: "demo") }
        #expect(throttle == nil)
    }

    @Test("every response carries X-Request-Id: /healthz, a problem, and a request the server refuses unparsed")
    func requestIDs() async throws {
        let server = try DevServer()
        let health = try await server.get("/healthz")
        let problem = try await server.get("/v1/upgrades/upg_missing")
        #expect(problem.status == 404)
        var ids: [String] = []
        for response in [health, problem] {
            let id = try #require(response.headers["x-request-id"], "status \(response.status) has no X-Request-Id")
            #expect(id.utf8.count == 16)
            ids.append(id)
        }
        // The problem's log line names the id the client saw.
        #expect(server.logs.lines.withLock { $0.contains { $0.contains(#""requestId":"\#(ids[1])""#) } })

        let raw = try TestClient(port: server.application.server.port)
        try raw.send("GET /healthz HTTP/1.1\r\n\r\n")
        let malformed = try raw.readResponse()
        #expect(malformed.status == 400 && malformed.problemSlug == "missing-host")
        let id = try #require(malformed.requestID, "a request that could not be parsed still gets an id")
        #expect(!ids.contains(id))
        #expect(server.logs.lines.withLock { $0.contains { $0.contains("request \(id): answered 400 missing-host") } })
    }

    @Test("health, readiness and metrics; methods a client makes up are counted as OTHER")
    func operations() async throws {
        let server = try DevServer()
        #expect(try await server.get("/healthz").status == 200)
        #expect(try await server.get("/readyz")["status"] == "ok")
        _ = try await server.post("/v1/upgrades", DevServer.demoLogin)
        for method in ["FROB", "BLORT"] {
            #expect(try await server.send(method, "/v1/upgrades", body: nil, contentType: nil).status == 405)
        }
        // A request the HTTP server refuses itself (two Host fields) is counted apart.
        let client = try TestClient(port: server.application.server.port)
        try client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
        #expect(try client.readResponse().status == 400)
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"http_requests_refused_total{reason="malformed"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"http_requests_refused_total{reason="server-busy"} 0"#))
        #expect(metrics.contains(#"http_connections_refused_total{reason="client-connection-limit"} 0"#))
        #expect(metrics.contains(#"http_requests_total{route="/v1/upgrades",method="POST",status="201"} 1"#))
        #expect(metrics.contains(#"http_requests_total{route="/v1/upgrades",method="OTHER",status="405"} 2"#))
        #expect(!metrics.contains("FROB") && !metrics.contains("BLORT"))
        // The one password check so far, and the CPU time it took.
        #expect(metrics.contains("\npassword_hashes_total 1\n"))
        let hashSeconds = metrics.split(separator: "\n").first { $0.hasPrefix("password_hash_cpu_seconds_total ") }
        #expect((hashSeconds?.split(separator: " ").last.flatMap { Double($0) } ?? 0) > 0)
        #expect(
            metrics.contains(#"upgrade_transitions_total{status="stepUpRequired",result="twoFactorAuthRequired"} 1"#)
        )
        #expect(metrics.contains("http_request_duration_seconds_bucket"))
        #expect(metrics.contains("http_worker_queue_depth"))
        #expect(metrics.contains("\nhttp_worker_queue_oldest_wait_seconds "))
        #expect(metrics.contains("\nhttp_worker_queue_wait_seconds_count "))
    }
}
