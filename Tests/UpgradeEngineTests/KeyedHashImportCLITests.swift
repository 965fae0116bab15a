import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `accounts import --hash-parameters`, `hash-parameters add|list` and `password verify
/// --hash-parameters` as processes: the project's Firebase scrypt and HMAC parameters are given once,
/// stored once sealed, and the imported hashes name them.
@Suite("upgrade-cli with Firebase scrypt and keyed HMAC parameters")
struct KeyedHashImportCLITests {
    static func privateFile(_ url: URL, _ data: Data) throws {
        try data.write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }

    @Test(
        "an import binds the rows' hashes to the sets it stores once, sealed, and names them again when run again",
        arguments: Backend.all
    )
    func importWithParameters(_ backend: Backend) throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyFile = dir.appendingPathComponent("key")
        let key = SecureRandom.bytes(32)
        try Self.privateFile(keyFile, Data(key))
        let parameters = dir.appendingPathComponent("parameters.json")
        try Self.privateFile(parameters, Data(KeyedHashFixtures.parametersFile(1, 3).utf8))
        let firebase = try #require(KeyedHashFixtures.entries.first { $0.set == 1 })
        let hmac = try #require(KeyedHashFixtures.entries.first { $0.set == 3 && $0.format == "hmac-sha512" })
        let stray = try #require(KeyedHashFixtures.entries.first { $0.set == 2 })
        let file = dir.appendingPathComponent("users.jsonl").path
        try """
        {"username":"alice","passwordHash":"\(firebase.importForm)"}
        {"username":"bob","passwordHash":"\(hmac.importForm)"}
        {"username":"carol","passwordHash":"\(stray.hash.replacingOccurrences(of: "p=2$", with: "p=77$"))"}

        """.write(toFile: file, atomically: true, encoding: .utf8)
        let db = try backend.database(forProcesses: true)
        let environment = ["UPGRADE_DB": try #require(db.url), "UPGRADE_SECRET_KEY_FILE": keyFile.path]
        let arguments = ["accounts", "import", file, "--hash-parameters", parameters.path]

        let noKey = try runCLI(arguments, environment: ["UPGRADE_DB": try #require(db.url)])
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("UPGRADE_SECRET_KEY_FILE"), "\(noKey.stderr)")

        let dry = try runCLI(arguments + ["--dry-run"], environment: environment)
        #expect(dry.stdout.contains("dry run: would have created 2, updated 0, skipped 0, failed 1"), "\(dry)")
        #expect(try db.store.read { try $0.hashParameterSets() }.isEmpty, "a dry run stores no set")

        let report = dir.appendingPathComponent("report.jsonl").path
        let run = try runCLI(arguments + ["--report", report], environment: environment)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stdout.contains("created 2, updated 0, skipped 0, failed 1"), "\(run.stdout)")
        let lines = try String(contentsOfFile: report, encoding: .utf8)
        #expect(
            lines.contains(
                #""username":"carol","action":"error","reason":"passwordHash: hash parameter set 77 is not stored"#
            )
        )

        let sets = try db.store.read { try $0.hashParameterSets() }
        #expect(sets.map(\.id) == [1, 2])
        #expect(sets.map(\.kind) == ["firebase-scrypt", "hmac"])
        let expected = KeyedHashFixtures.sets
        let box = try SecretBox(key: key)
        #expect(try HashParameterSet.open(sets[0], with: box) == expected[1])
        #expect(try HashParameterSet.open(sets[1], with: box) == expected[3])
        let secrets = [expected[1], expected[3]].compactMap { $0 }.flatMap(KeyedHashTests.secrets)
        for record in sets {
            for secret in secrets {
                #expect(!record.sealed.hexString.contains(Array(secret.utf8).hexString))
            }
        }
        let stored = try db.store.read { tx in
            try ["alice", "bob"].map { name in
                let account = try #require(try tx.account(username: Username(name)))
                return try #require(try tx.passwordCredential(accountID: account.id))
            }
        }
        #expect(stored.map(\.hash) == [firebase.hash, PasswordHash.binding(hmac.importForm, to: 2)])
        #expect(stored.map(\.format) == ["firebase-scrypt", "hmac-sha512"])

        // The same file again: the same sets, so the same import, already committed.
        let again = try runCLI(arguments, environment: environment)
        #expect(again.stdout.contains("created 0"), "\(again.stdout)")
        #expect(try db.store.read { try $0.hashParameterSets() }.count == 2)

        let listed = try runCLI(["hash-parameters", "list"], environment: environment)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("p=1 firebase-scrypt stored "), "\(listed.stdout)")
        #expect(listed.stdout.contains("rounds 8, memory cost 14"))
        #expect(listed.stdout.contains("p=2 hmac stored "))
        let otherKey = dir.appendingPathComponent("other-key")
        try Self.privateFile(otherKey, Data(SecureRandom.bytes(32)))
        let wrongKey = try runCLI(
            ["hash-parameters", "list"],
            environment: environment.merging(["UPGRADE_SECRET_KEY_FILE": otherKey.path]) { $1 }
        )
        #expect(wrongKey.status == 1)
        #expect(wrongKey.stdout.contains("does not open with the configured secret key"))
        // db check opens the sets with the key: with another key both accounts are listed.
        let checked = try runCLI(["db", "check"], environment: environment)
        #expect(checked.status == 0, "\(checked.stdout)")
        let misKeyed = try runCLI(
            ["db", "check"],
            environment: environment.merging(["UPGRADE_SECRET_KEY_FILE": otherKey.path]) { $1 }
        )
        #expect(misKeyed.status == 1)
        #expect(
            misKeyed.stdout.contains(
                "stored as 'alice' cannot sign in with its password: hash parameter set 1 does not open"
            )
        )
        #expect(
            misKeyed.stdout.contains(
                "stored as 'bob' cannot sign in with its password: hash parameter set 2 does not open"
            )
        )
        for output in [run, again, listed, wrongKey, dry, checked, misKeyed] {
            for secret in secrets { #expect(!(output.stdout + output.stderr).contains(secret)) }
        }
    }

    @Test("hash-parameters add prints ids, reuses equal sets, and refuses a file others can read")
    func addAndVerify() throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = "sqlite:" + dir.appendingPathComponent("real.db").path
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        let parameters = dir.appendingPathComponent("parameters.json")
        try Self.privateFile(parameters, Data(KeyedHashFixtures.parametersFile(2, 4).utf8))

        let added = try runCLI(["hash-parameters", "add", parameters.path, "--dev", "--db", db])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(
            added.stdout
                == "firebase-scrypt: p=1 (rounds 2, memory cost 10 (scrypt N=2^10, r=2, p=1))\nhmac: p=2 (a salt goes after the password)\n"
        )
        let repeated = try runCLI(["hash-parameters", "add", parameters.path, "--dev", "--db", db])
        #expect(repeated.stdout == added.stdout)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: parameters.path)
        let open = try runCLI(["hash-parameters", "add", parameters.path, "--dev", "--db", db])
        #expect(open.status == 2)
        #expect(open.stderr.contains("holds secrets and is readable by others"), "\(open.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: parameters.path)

        // password verify takes the import form and the parameters file.
        for entry in KeyedHashFixtures.entries where entry.set == 2 || entry.set == 4 {
            let arguments = ["password", "verify", "--hash", entry.importForm, "--hash-parameters", parameters.path]
            let match = try runCLI(arguments, stdin: entry.password)
            #expect(match.status == 0, "\(entry) \(match.stderr)")
            #expect(match.stdout.hasPrefix("match (\(entry.format)"))
            #expect(try runCLI(arguments, stdin: entry.password + "x").status == 1)
        }
        let entry = try #require(KeyedHashFixtures.entries.first { $0.set == 4 })
        let without = try runCLI(["password", "verify", "--hash", entry.importForm], stdin: entry.password)
        #expect(without.status == 2)
        #expect(without.stderr.contains("needs a hmac parameter set"), "\(without.stderr)")
    }
}
