import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// Provisioning rows name a stored Firebase scrypt or HMAC parameter set by id, and the server
/// checks those accounts' passwords with the set (its verifier reads the sealed sets).
@Suite("REST API end to end: provisioned hashes that name a parameter set")
struct KeyedHashProvisioningTests {
    /// `Fixtures/passwords/keyed-hashes.json`, made by PyPI's firebase-scrypt and Python's hmac.
    static func fixtures() throws -> [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/passwords/keyed-hashes.json")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    @Test(
        "a row naming a stored set is provisioned and signs in; one in import form is 422 naming passwordHash",
        arguments: Backend.all
    )
    func provisionAndSignIn(_ backend: Backend) async throws {
        let harness = try ProvisioningEndToEndTests.Harness(backend)
        let fixtures = try Self.fixtures()
        let sets = try #require(fixtures["parameterSets"] as? [String: [String: Any]])
        let entries = try #require(fixtures["fixtures"] as? [[String: Any]])
        // Sets 1 and 3 of the file, stored as the server's 1 and 2 in the order the JSON object
        // lists them (dev mode: the development key).
        var file: [String: Any] = [:]
        for id in ["1", "3"] {
            var set = try #require(sets[id])
            let kind = try #require(set.removeValue(forKey: "kind") as? String)
            file[kind] = set
        }
        let parsed = try HashParameterSet.parseFile(Array(try JSONSerialization.data(withJSONObject: file)))
        let ids = try StoredHashParameters.add(
            parsed,
            store: harness.server.application.store,
            secrets: SecretBox.developmentOnly(),
            now: 1
        )
        #expect(Set(ids) == [1, 2])
        let stored = Dictionary(uniqueKeysWithValues: zip(parsed.map(\.kind), ids))

        for (username, set, kind) in [("fiona", 1, HashParameterSet.Kind.firebaseScrypt), ("hank", 3, .hmac)] {
            let storedID = try #require(stored[kind])
            let entry = try #require(entries.first { $0["set"] as? Int == set })
            let hash = try #require(entry["hash"] as? String).replacingOccurrences(
                of: "p=\(set)$",
                with: "p=\(storedID)$"
            )
            let password = try #require(entry["password"] as? String)
            let importForm = try #require(entry["importForm"] as? String)

            let refused = try await harness.put(username, ["passwordHash": importForm])
            #expect(
                refused.status == 422 && refused.problem == "validation",
                "\(ProvisioningEndToEndTests.text(refused))"
            )
            #expect((refused["detail"] ?? "").contains("passwordHash"))
            #expect((refused["detail"] ?? "").contains("names no parameter set"), "\(refused["detail"] ?? "")")

            let created = try await harness.put(username, ["passwordHash": hash])
            #expect(created.status == 201, "\(ProvisioningEndToEndTests.text(created)))")

            let wrong = try await harness.server.post(
                "/v1/upgrades",
                ["username": username, "password": password + "x", "serviceIdentifier": "s"]
            )
            #expect(wrong.status == 401, "\(ProvisioningEndToEndTests.text(wrong))")
            let opened = try await harness.server.post(
                "/v1/upgrades",
                ["username": username, "password": password, "serviceIdentifier": "s"]
            )
            #expect(opened.status == 201, "\(ProvisioningEndToEndTests.text(opened))")
            #expect(try harness.storedHash(username)?.hasPrefix("$argon2id$") == true, "rehashed on the first match")
        }
        let missing = try await harness.put(
            "ivan",
            ["passwordHash": "$hmac-sha256$p=9$" + String(repeating: "a", count: 64)]
        )
        #expect(missing.status == 422)
        #expect((missing["detail"] ?? "").contains("hash parameter set 9 is not stored"), "\(missing["detail"] ?? "")")
    }
}
