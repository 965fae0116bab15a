import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// `PUT /v1/admin/accounts/{username}` and `POST /v1/admin/accounts/batch` over HTTP on loopback:
/// the `provisioner` token has the `provisioning` scope, `support` only `audit` and `accounts`.
@Suite("REST API end to end: provisioning accounts")
struct ProvisioningEndToEndTests {
    final class Harness: Sendable {
        let server: DevServer
        let directory: URL
        let provisioner: String
        let support: String

        init(_ backend: Backend) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("provision-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("admin-tokens").path
            provisioner = try AdminTokenFile.add(name: "provisioner", scopes: [.provisioning], path: file, now: 1)
            support = try AdminTokenFile.add(name: "support", scopes: [.audit, .accounts], path: file, now: 1)
            server = try DevServer(backend, environment: ["UPGRADE_ADMIN_TOKENS_FILE": file])
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        func put(
            _ username: String,
            _ body: [String: any Sendable],
            token: String? = nil
        ) async throws
            -> DevServer.Response
        {
            try await server.send(
                "PUT",
                "/v1/admin/accounts/\(username)",
                body: try JSONSerialization.data(withJSONObject: body),
                contentType: "application/json",
                headers: ["Authorization": "Bearer \(token ?? provisioner)"]
            )
        }

        func batch(_ rows: [[String: any Sendable]], token: String? = nil) async throws -> DevServer.Response {
            try await server.post(
                "/v1/admin/accounts/batch",
                ["accounts": rows],
                headers: ["Authorization": "Bearer \(token ?? provisioner)"]
            )
        }

        /// Every audit row, newest first.
        func audit() async throws -> [[String: Any]] {
            let page = try await server.send(
                "GET",
                "/v1/admin/audit?limit=1000",
                body: nil,
                contentType: nil,
                headers: ["Authorization": "Bearer \(support)"]
            )
            #expect(page.status == 200)
            return page.json["events"] as? [[String: Any]] ?? []
        }

        func storedHash(_ username: String) throws -> String? {
            try server.application.store.read { tx in
                guard let account = try tx.account(username: Username(username)) else { return nil }
                return try tx.passwordCredential(accountID: account.id)?.hash
            }
        }
    }

    static func hash(_ password: String) throws -> String {
        try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1)).hash(password: password)
    }

    static func text(_ response: DevServer.Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test(
        "PUT: 201 created, the same body 200 and nothing written, a change 200, 422 naming the field",
        arguments: Backend.all
    )
    func put(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let hash = try Self.hash("pw-one")
        let body: [String: any Sendable] = ["passwordHash": hash, "email": "a@example.com", "displayName": "A"]

        let created = try await harness.put("alice", body)
        #expect(created.status == 201, "\(Self.text(created))")
        #expect(created["action"] == "created" && created["username"] == "alice")
        #expect(created.headers["cache-control"] == "no-store")
        #expect(try harness.storedHash("alice") == hash)
        let afterCreate = try await harness.audit()
        #expect(afterCreate.first?["event"] as? String == "account.provisioned")
        #expect((afterCreate.first?["detail"] as? [String: Any])?["by"] as? String == "provisioner")

        // The same body again: 200, skipped, and neither a write nor an audit row.
        let again = try await harness.put("alice", body)
        #expect(again.status == 200 && again["action"] == "skipped", "\(Self.text(again))")
        #expect(try await harness.audit().count == afterCreate.count)

        var changed = body
        changed["displayName"] = "Alice"
        let updated = try await harness.put("alice", changed)
        #expect(updated.status == 200 && updated["action"] == "updated", "\(Self.text(updated))")
        let afterUpdate = try await harness.audit()
        #expect(afterUpdate.count == afterCreate.count + 1)
        #expect(afterUpdate.first?["event"] as? String == "account.provision-updated")

        for (refused, field) in [
            (["passwordHash": "$argon2id$nonsense"], "passwordHash"),
            (["passwordHash": hash, "email": "no-at-sign"], "email"),
            (["passwordHash": hash, "legacyPassword": true], "legacyPassword"),
            (["passwordHash": hash, "username": "bob"], "username"),
            (["email": "b@example.com"], "passwordHash"),
            (["passwordHash": hash, "totp": 7], "totp"),
        ] as [([String: any Sendable], String)] {
            let answer = try await harness.put("bob", refused)
            #expect(answer.status == 422 && answer.problem == "validation", "\(field): \(Self.text(answer))")
            #expect((answer["detail"] ?? "").contains(field), "\(field): \(answer["detail"] ?? "")")
            #expect(!Self.text(answer).contains(hash))
        }
        #expect(try harness.storedHash("bob") == nil)
        #expect(try await harness.audit().count == afterUpdate.count)
        for answer in [created, again, updated] { #expect(!Self.text(answer).contains(hash)) }
    }

    @Test(
        "PUT with TOTP and recovery codes: the same body again is skipped, a new secret updates",
        arguments: Backend.all
    )
    func secondFactor(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let codes = [String(repeating: "1", count: 64), String(repeating: "2", count: 64)]
        var body: [String: any Sendable] = [
            "passwordHash": try Self.hash("pw"),
            "totp": "otpauth://totp/Example:erin?secret=JBSWY3DPEHPK3PXP&issuer=Example",
            "recoveryCodes": codes,
        ]
        #expect(try await harness.put("erin", body).status == 201)
        let before = try await harness.audit().count
        let again = try await harness.put("erin", body)
        #expect(again.status == 200 && again["action"] == "skipped", "\(Self.text(again))")
        #expect(try await harness.audit().count == before)

        body["totp"] = "otpauth://totp/Example:erin?secret=KRSXG5CTMVRXEZLU&issuer=Example"
        let rotated = try await harness.put("erin", body)
        #expect(rotated.status == 200 && rotated["action"] == "updated")
        #expect(!Self.text(rotated).contains("KRSXG5CTMVRXEZLU") && !Self.text(rotated).contains(codes[0]))
    }

    @Test("a token without the provisioning scope gets 403, none 401, and nothing is written", arguments: Backend.all)
    func scope(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let body: [String: any Sendable] = ["passwordHash": try Self.hash("pw")]
        let put = try await harness.put("carol", body, token: harness.support)
        #expect(put.status == 403 && put.problem == "insufficient-scope")
        #expect(put.headers["www-authenticate"]?.contains("scope=\"provisioning\"") == true)
        let batch = try await harness.batch([["username": "carol"].merging(body) { $1 }], token: harness.support)
        #expect(batch.status == 403 && batch.problem == "insufficient-scope")
        let none = try await harness.server.send(
            "PUT",
            "/v1/admin/accounts/carol",
            body: try JSONSerialization.data(withJSONObject: body),
            contentType: "application/json"
        )
        #expect(none.status == 401 && none.problem == "unauthorized")
        #expect(try harness.storedHash("carol") == nil)
    }

    @Test(
        "concurrent PUTs of one new account: one 201, the others 200, never a failure; one account",
        arguments: Backend.all
    )
    func concurrentCreate(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let body: [String: any Sendable] = ["passwordHash": try Self.hash("pw"), "email": "eve@example.com"]
        for round in 0..<10 {
            let username = "eve\(round)"
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<16 { group.addTask { try await harness.put(username, body).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 1, "\(username): \(statuses)")
            #expect(statuses.allSatisfy { $0 == 201 || $0 == 200 }, "\(username): \(statuses)")
            #expect(try harness.storedHash(username) != nil)
        }
    }

    @Test(
        "a new password hash over PUT ends the upgrade the old password opened: 409 credentials-changed",
        arguments: Backend.all
    )
    func credentialChangeEndsFlows(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        #expect(try await harness.put("dave", ["passwordHash": try Self.hash("old-pw")]).status == 201)
        let opened = try await server.post(
            "/v1/upgrades",
            ["username": "dave", "password": "old-pw", "serviceIdentifier": "s"]
        )
        #expect(opened.status == 201, "\(Self.text(opened))")
        let id = try #require(opened["id"])

        let replaced = try await harness.put("dave", ["passwordHash": try Self.hash("new-pw")])
        #expect(replaced.status == 200 && replaced["action"] == "updated")

        let attempt = try await server.post(
            "/v1/upgrades/\(id)/apple-credential",
            try server.appleCredential(for: opened)
        )
        #expect(attempt.status == 409 && attempt.problem == "credentials-changed", "\(Self.text(attempt))")
        let view = try await server.get("/v1/upgrades/\(id)")
        #expect(view["status"] == "failed" && view["problem"] == "credentials-changed")
    }

    @Test(
        "batch: the exact answer per row, a repeated batch changes nothing, 1001 rows refused",
        arguments: Backend.all
    )
    func batch(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let first = try Self.hash("pw-1")
        let second = try Self.hash("pw-2")
        #expect(try await harness.put("kept", ["passwordHash": first]).status == 201)
        #expect(try await harness.put("changed", ["passwordHash": first]).status == 201)

        let rows: [[String: any Sendable]] = [
            ["username": "fresh", "passwordHash": first, "displayName": "F"],
            ["username": "changed", "passwordHash": second],
            ["username": "kept", "passwordHash": first],
            ["username": "broken", "passwordHash": "not a hash"],
            ["passwordHash": first],
            ["username": "Fresh", "passwordHash": first],
            ["username": "other", "passwordHash": first, "legacyPassword": true],
        ]
        let expected: [(String?, String, String?)] = [
            ("fresh", "created", nil),
            ("changed", "updated", nil),
            ("kept", "skipped", "unchanged"),
            ("broken", "error", "passwordHash"),
            (nil, "error", "username"),
            ("fresh", "error", "index 0"),
            ("other", "error", "legacyPassword"),
        ]
        func check(_ answer: DevServer.Response, _ expected: [(String?, String, String?)]) throws {
            #expect(answer.status == 200, "\(Self.text(answer))")
            let results = try #require(answer.json["results"] as? [[String: Any]])
            #expect(results.count == expected.count)
            for (index, (result, want)) in zip(results, expected).enumerated() {
                #expect(result["index"] as? Int == index)
                #expect(result["username"] as? String == want.0, "\(index): \(result)")
                #expect(result["action"] as? String == want.1, "\(index): \(result)")
                if let reason = want.2 {
                    #expect((result["reason"] as? String ?? "").contains(reason), "\(index): \(result)")
                } else {
                    #expect(result["reason"] == nil, "\(index): \(result)")
                }
            }
            #expect(!Self.text(answer).contains(first) && !Self.text(answer).contains(second))
        }
        let before = try await harness.audit().count
        try check(try await harness.batch(rows), expected)
        #expect(try harness.storedHash("fresh") == first)
        #expect(try harness.storedHash("changed") == second)
        #expect(try harness.storedHash("kept") == first)
        #expect(try harness.storedHash("broken") == nil)
        let afterFirst = try await harness.audit()
        #expect(afterFirst.count == before + 2)

        // The same batch again: every account already holds what its row gives.
        var repeated = expected
        repeated[0] = ("fresh", "skipped", "unchanged")
        repeated[1] = ("changed", "skipped", "unchanged")
        try check(try await harness.batch(rows), repeated)
        #expect(try await harness.audit().count == afterFirst.count)

        let tooMany = (0...1000).map { ["username": "u\($0)"] as [String: any Sendable] }
        let refused = try await harness.batch(tooMany)
        #expect(refused.status == 422 && refused.problem == "validation")
        #expect((refused["detail"] ?? "").contains("1000"))
        #expect(try harness.storedHash("u0") == nil)
    }

    @Test(
        "batch: 1000 rows with argon2id hashes (well over 64 KiB) fit the route's own body limit",
        arguments: Backend.all
    )
    func fullBatch(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let hash = try PasswordHasher().hash(password: "pw-full")
        let rows = (0..<1000).map {
            ["username": "full\($0)", "passwordHash": hash, "email": "full\($0)@example.com"] as [String: any Sendable]
        }
        let answer = try await harness.batch(rows)
        #expect(answer.status == 200, "\(Self.text(answer).prefix(300))")
        let results = try #require(answer.json["results"] as? [[String: Any]])
        #expect(results.count == 1000)
        #expect(results.allSatisfy { $0["action"] as? String == "created" })
        #expect(try harness.storedHash("full999") == hash)
    }
}
