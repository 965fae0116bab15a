import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// Answers a client developer reads the README and `Schema/openapi.yaml` for, where the two and the
/// server once disagreed: a PUT of one field keeps the rest, refusals name their field first, a
/// refused batch row keeps its username, a reversed audit window is refused, every problem carries
/// `result`, and answers naming ids are not stored by caches.
@Suite("REST API end to end: answers as documented")
struct RESTContractEndToEndTests {
    typealias Harness = ProvisioningEndToEndTests.Harness

    static func text(_ response: DevServer.Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test("PUT of one field updates an existing account and keeps its password; a new account still needs one")
    func partialUpdate() async throws {
        let harness = try Harness(.sqlite)
        let hash = try ProvisioningEndToEndTests.hash("pw-frank")
        #expect(try await harness.put("frank", ["passwordHash": hash, "email": "f@example.com"]).status == 201)

        let email = try await harness.put("frank", ["email": "frank@example.com"])
        #expect(email.status == 200 && email["action"] == "updated", "\(Self.text(email))")
        let name = try await harness.put("frank", ["displayName": "Frank"])
        #expect(name.status == 200 && name["action"] == "updated", "\(Self.text(name))")
        #expect(try harness.storedHash("frank") == hash, "the password is kept")
        let profile = try harness.server.application.store.read { tx in
            try tx.account(username: Username("frank")).flatMap { try tx.accountProfile(accountID: $0.id) }
        }
        #expect(profile?.email == "frank@example.com" && profile?.displayName == "Frank")

        let new = try await harness.put("grace", ["email": "g@example.com"])
        #expect(new.status == 422 && new.problem == "validation")
        #expect(new["detail"]?.hasPrefix("passwordHash: is required for a new account") == true, "\(Self.text(new))")
        #expect(try harness.storedHash("grace") == nil)
    }

    @Test("under --dev, a provisioned appleSub is linked under the emulator's team and client")
    func developmentLink() async throws {
        let harness = try Harness(.sqlite)
        let linked = try await harness.put("jill", ["appleSub": "001234.abcdef0123456789abcdef0123456789.0123"])
        #expect(linked.status == 201, "\(Self.text(linked))")
        let link = try harness.server.application.store.read { tx in
            try tx.account(username: Username("jill")).flatMap { try tx.appleLink(accountID: $0.id) }
        }
        #expect(link?.clientID == DevelopmentEnvironment.clientID)
    }

    @Test("an unknown field is refused naming it first; PUT does not offer username; a batch row keeps its username")
    func unknownFields() async throws {
        let harness = try Harness(.sqlite)
        let hash = try ProvisioningEndToEndTests.hash("pw-hank")
        let put = try await harness.put("hank", ["passwordHash": hash, "colour": "red"])
        #expect(put.status == 422 && put.problem == "validation")
        let detail = try #require(put["detail"])
        #expect(detail.hasPrefix("colour: unknown field; accepted: "), "\(detail)")
        #expect(!detail.contains("username"), "\(detail)")
        let named = try await harness.put("hank", ["passwordHash": hash, "username": "hank"])
        #expect(named["detail"] == "username: is the path's; leave it out of the body")

        let batch = try await harness.batch([
            ["username": "hank", "passwordHash": hash, "colour": "red"],
            ["username": "ivy", "passwordHash": hash, "totp": 7],
            ["passwordHash": hash, "colour": "red"],
        ])
        #expect(batch.status == 200, "\(Self.text(batch))")
        let results = batch.json["results"] as? [[String: Any]] ?? []
        #expect(results.map { $0["username"] as? String } == ["hank", "ivy", nil])
        #expect(results.allSatisfy { $0["action"] as? String == "error" })
        #expect((results.first?["reason"] as? String)?.hasPrefix("colour: unknown field; accepted: ") == true)
        #expect((results.dropFirst().first?["reason"] as? String)?.hasPrefix("totp: must be a string") == true)
    }

    @Test("the audit search refuses a window that does not end after it starts, as the report does")
    func auditWindow() async throws {
        let harness = try Harness(.sqlite)
        func audit(_ query: String) async throws -> DevServer.Response {
            try await harness.server.send(
                "GET",
                "/v1/admin/audit?\(query)",
                body: nil,
                contentType: nil,
                headers: ["Authorization": "Bearer \(harness.support)"]
            )
        }
        for query in ["since=2030-01-01T00:00:00Z&until=2020-01-01T00:00:00Z", "since=100&until=100"] {
            let refused = try await audit(query)
            #expect(refused.status == 422 && refused.problem == "validation", "\(query)")
            #expect(refused["detail"] == "since must be before until")
        }
        #expect(try await audit("since=100&until=101").status == 200)
        #expect(try await audit("since=2026-11-24T10:00:00%2B01:00").status == 200)
    }

    @Test("every problem carries result, the router's and the admin checks' too")
    func problemsCarryResult() async throws {
        let harness = try Harness(.sqlite)
        let answers = [
            try await harness.server.get("/v1/nothing"),
            try await harness.server.get("/v1/upgrade-tickets"),
            try await harness.put("alice", ["email": "a@example.com"], token: "not-a-token"),
            try await harness.put("alice", ["email": "a@example.com"], token: harness.support),
            try await harness.server.post("/v1/apple/sign-in", ["identityToken": "x", "email": "bad"]),
        ]
        #expect(answers.map(\.status) == [404, 405, 401, 403, 422])
        for answer in answers {
            #expect(answer.headers["content-type"] == "application/problem+json")
            #expect(answer["result"] == "failure", "\(Self.text(answer))")
        }
        // A wrong code's own result is kept.
        let started = try await harness.server.post("/v1/upgrades", DevServer.demoLogin)
        let id = try #require(started["id"])
        let wrong = try await harness.server.post("/v1/upgrades/\(id)/step-up", ["code": "000000"])
        #expect(wrong.status == 401 && wrong["result"] == "twoFactorAuthRequired", "\(Self.text(wrong))")
        #expect(Self.text(wrong).components(separatedBy: "\"result\"").count == 2, "one result member")

        let view = try await harness.server.get("/v1/upgrades/\(id)")
        #expect(view.status == 200)
        #expect(view.headers["cache-control"] == "no-store")
    }
}
