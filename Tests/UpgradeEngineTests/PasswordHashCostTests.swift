import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// What one check may cost: every format's costliest admitted hash stays within about half a second
/// of one core (measured in Benchmarks/, not here), and a hash past a bound is refused by name,
/// with the fix for the export, before any work.
@Suite("Password hash cost bounds")
struct PasswordHashCostTests {
    struct Bound: Sendable, CustomTestStringConvertible {
        let label: String
        /// At the bound: admitted.
        let admitted: String
        /// Just past it: refused, naming `limit`.
        let refused: String
        let limit: String

        var testDescription: String { label }
    }

    static let salt = "c2FsdHNhbHRzYWx0c2FsdA"
    static let digest32 = String(repeating: "A", count: 43)
    static let bcryptBody = "GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"
    static let sha512Body = "$saltsaltsaltsalt$" + String(repeating: ".", count: 86)
    static let sha256Body = "$saltsaltsaltsalt$" + String(repeating: ".", count: 43)
    static let yescryptBody = "$saltsaltsaltsalt$" + String(repeating: ".", count: 43)
    static let passlibSHA512 = "9eYIZyxnHWDcGlJ59TCKKzrRuRqPtVpxbf33V583q/gKSNm7selRUN511d8qRBjeGMZWUTPDUnvIQdDtpLc7vQ"

    static let bounds: [Bound] = [
        Bound(
            label: "bcrypt cost 13 / 14",
            admitted: "$2b$13$\(bcryptBody)",
            refused: "$2b$14$\(bcryptBody)",
            limit: "bcryptCost"
        ),
        Bound(
            label: "argon2id 160 MiB × 2 / × 3",
            admitted: "$argon2id$v=19$m=163840,t=2,p=1$\(salt)$\(digest32)",
            refused: "$argon2id$v=19$m=163840,t=3,p=1$\(salt)$\(digest32)",
            limit: "argon2MaxWorkKiB"
        ),
        Bound(
            label: "argon2i 64 MiB × 5 / 256 MiB × 2",
            admitted: "$argon2i$v=19$m=65536,t=5,p=4$\(salt)$\(digest32)",
            refused: "$argon2i$v=19$m=262144,t=2,p=4$\(salt)$\(digest32)",
            limit: "argon2MaxWorkKiB"
        ),
        Bound(
            label: "scrypt 128 MiB, p=1 / 64 MiB, p=3",
            admitted: "$scrypt$ln=17,r=8,p=1$\(salt)$\(digest32)",
            refused: "$scrypt$ln=16,r=8,p=3$\(salt)$\(digest32)",
            limit: "scryptMaxWorkBytes"
        ),
        Bound(
            label: "scrypt 128 MiB / 256 MiB of memory",
            admitted: "$scrypt$ln=16,r=16,p=1$\(salt)$\(digest32)",
            refused: "$scrypt$ln=18,r=8,p=1$\(salt)$\(digest32)",
            limit: "scryptMaxMemoryBytes"
        ),
        Bound(
            label: "Django PBKDF2-SHA256 2 000 000 / 2 000 001",
            admitted: "pbkdf2_sha256$2000000$saltsalt$\(digest32)=",
            refused: "pbkdf2_sha256$2000001$saltsalt$\(digest32)=",
            limit: "pbkdf2Iterations"
        ),
        Bound(
            label: "passlib PBKDF2-SHA512 800 000 / 800 001",
            admitted: "$pbkdf2-sha512$800000$\(salt)$\(passlibSHA512)",
            refused: "$pbkdf2-sha512$800001$\(salt)$\(passlibSHA512)",
            limit: "pbkdf2SHA512Iterations"
        ),
        Bound(
            label: "sha512-crypt 800 000 / 850 000 rounds",
            admitted: "$6$rounds=800000\(sha512Body)",
            refused: "$6$rounds=850000\(sha512Body)",
            limit: "shaCryptMaxBlocks"
        ),
        Bound(
            label: "sha256-crypt 560 000 / 600 000 rounds, also inside {CRYPT}",
            admitted: "{CRYPT}$5$rounds=560000\(sha256Body)",
            refused: "{CRYPT}$5$rounds=600000\(sha256Body)",
            limit: "shaCryptMaxBlocks"
        ),
        Bound(
            label: "yescrypt RW 256 MiB, t=0 / t=1",
            admitted: "$y$jDT\(yescryptBody)",
            refused: "$y$jDT/.\(yescryptBody)",
            limit: "yescryptMaxWorkBytes"
        ),
        Bound(
            label: "yescrypt classic scrypt 64 MiB, p=3 / p=4",
            admitted: "$y$.BT./\(yescryptBody)",
            refused: "$y$.BT.0\(yescryptBody)",
            limit: "yescryptMaxWorkBytes"
        ),
        Bound(
            label: "yescrypt WORM 64 MiB, t=4 / 128 MiB, t=4",
            admitted: "$y$/BT/1\(yescryptBody)",
            refused: "$y$/CT/1\(yescryptBody)",
            limit: "yescryptMaxWorkBytes"
        ),
        Bound(
            label: "phpass cost 20 / 21",
            admitted: "$P$Isaltsalt" + String(repeating: ".", count: 22),
            refused: "$P$Jsaltsalt" + String(repeating: ".", count: 22),
            limit: "phpassCost"
        ),
        Bound(
            label: "Drupal 7 cost 19 / 20",
            admitted: "$S$Hsaltsalt" + String(repeating: ".", count: 43),
            refused: "$S$Isaltsalt" + String(repeating: ".", count: 43),
            limit: "drupalCost"
        ),
        Bound(
            label: "Django bcrypt_sha256 cost 13 / 14",
            admitted: "bcrypt_sha256$$2b$13$\(bcryptBody)",
            refused: "bcrypt_sha256$$2b$14$\(bcryptBody)",
            limit: "bcryptCost"
        ),
        Bound(
            label: "Django argon2id 160 MiB × 2 / × 3",
            admitted: "argon2$argon2id$v=19$m=163840,t=2,p=8$\(salt)$\(digest32)",
            refused: "argon2$argon2id$v=19$m=163840,t=3,p=8$\(salt)$\(digest32)",
            limit: "argon2MaxWorkKiB"
        ),
    ]

    let verifier = PasswordVerifier()

    @Test(
        "each cost bound admits a hash at it and refuses one past it, naming the limit and the fix",
        arguments: bounds
    )
    func bound(_ bound: Bound) throws {
        _ = try verifier.inspect(bound.admitted)
        let error = #expect(throws: PasswordHashError.self) { try verifier.inspect(bound.refused) }
        #expect(error?.code == .parameterOutOfBounds)
        #expect(error?.message.contains("PasswordHashLimits.\(bound.limit)") == true, "names the limit")
        #expect(error?.message.contains("export it rehashed within that limit") == true, "says how to fix the export")
        // verify refuses the same way, before any derivation (the refused costs would take seconds).
        let verifyError = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: "password", encodedHash: bound.refused)
        }
        #expect(verifyError?.code == .parameterOutOfBounds)
    }

    @Test(
        "an import refuses each row whose hash is past a bound, naming the limit and the fix, and takes the ones at it"
    )
    func importRefusals() throws {
        let database = try Backend.sqlite.database()
        var lines: [String] = []
        for (index, bound) in Self.bounds.enumerated() {
            for (kind, hash) in [("at", bound.admitted), ("past", bound.refused)] {
                let escaped = hash.replacingOccurrences(of: "\\", with: "\\\\")
                lines.append(#"{"username": "\#(kind)\#(index)", "passwordHash": "\#(escaped)"}"#)
            }
        }
        let (reports, summary) = try AccountImporterTests.run(database.store, lines.joined(separator: "\n") + "\n")
        #expect(summary.created == Self.bounds.count)
        for (index, bound) in Self.bounds.enumerated() {
            let at = reports.first { $0.username == "at\(index)" }
            let past = reports.first { $0.username == "past\(index)" }
            #expect(at?.action == .created, "\(bound.label)")
            #expect(past?.action == .error, "\(bound.label)")
            let reason = past?.reason ?? ""
            #expect(reason.hasPrefix("passwordHash: "), "\(bound.label): names the field")
            #expect(reason.contains("PasswordHashLimits.\(bound.limit)"), "\(bound.label): names the limit")
            #expect(
                reason.contains("export it rehashed within that limit"),
                "\(bound.label): says how to fix the export"
            )
        }
    }

    @Test("db check lists the stored hashes over the limits, which cannot sign in, and exits 1")
    func databaseCheck() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = "sqlite:" + directory.appendingPathComponent("check.db").path
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        #expect(try runCLI(["accounts", "add", "alice", "--db", db], stdin: "pw").status == 0)
        #expect(try runCLI(["db", "check", "--db", db]).status == 0)
        // A hash written when bcrypt 14 was still admitted.
        let store = try DatabaseLocation.parse(db).open()
        try store.write { tx in
            let account = AccountRecord(
                id: "old-id",
                username: "olduser",
                credentialKind: .password,
                createdAt: 1,
                updatedAt: 1
            )
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(
                    accountID: account.id,
                    hash: Self.bounds[0].refused,
                    format: "bcrypt",
                    updatedAt: 1
                )
            )
        }
        let checked = try runCLI(["db", "check", "--db", db])
        #expect(checked.status == 1)
        let lines = checked.stdout.split(separator: "\n").map(String.init)
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "hash: account old-id stored as 'olduser' cannot sign in with its password: $2b$ hash has cost = 14"
                )
                    && $0.contains("PasswordHashLimits.bcryptCost")
            }
        )
        #expect(lines.contains { $0.hasPrefix("1 of 2 stored password hash(es) cannot be checked") })
    }

    @Test("a sha-crypt hash checks passwords as long as its rounds allow and refuses longer ones before hashing")
    func shaCryptPasswordLength() throws {
        var limits = PasswordHashLimits()
        limits.shaCryptMaxBlocks = 20_000
        let strict = PasswordVerifier(limits: limits)
        let hash = "$6$rounds=5000\(Self.sha512Body)"
        let longest = (64...511).last {
            PasswordHashLimits.shaCryptBlocks(sha512: true, rounds: 5000, saltBytes: 16, passwordBytes: $0) <= 20_000
        }
        let allowed = try #require(longest)
        #expect(try !strict.verify(password: String(repeating: "p", count: allowed), encodedHash: hash))
        let error = #expect(throws: PasswordHashError.self) {
            try strict.verify(password: String(repeating: "p", count: allowed + 1), encodedHash: hash)
        }
        #expect(error?.code == .invalidPassword)
        #expect(error?.message.contains("shaCryptMaxBlocks") == true)
        // Inside {CRYPT} the same bound applies.
        #expect(throws: PasswordHashError.self) {
            try strict.verify(password: String(repeating: "p", count: allowed + 1), encodedHash: "{CRYPT}" + hash)
        }
        // The default limits let the longest password libxcrypt takes through at the usual 5000 rounds.
        #expect(try !verifier.verify(password: String(repeating: "p", count: 511), encodedHash: hash))
    }

    @Test("the block count follows the rounds and the password's length")
    func shaCryptBlocks() {
        // An 8-byte password: one SHA-512 block a round; sha256-crypt needs one or two.
        #expect(PasswordHashLimits.shaCryptBlocks(sha512: true, rounds: 42, saltBytes: 16, passwordBytes: 8) == 42)
        let sha256 = PasswordHashLimits.shaCryptBlocks(sha512: false, rounds: 42, saltBytes: 16, passwordBytes: 8)
        #expect((42...84).contains(sha256))
        let short = PasswordHashLimits.shaCryptBlocks(sha512: true, rounds: 1000, saltBytes: 16, passwordBytes: 8)
        let long = PasswordHashLimits.shaCryptBlocks(sha512: true, rounds: 1000, saltBytes: 16, passwordBytes: 511)
        #expect(long > 8 * short, "a 511-byte password costs over eight times an 8-byte one")
    }

    @Test("yescrypt's work counts the passes each mode makes over its memory")
    func yescryptWork() {
        let mib = 1 << 20
        // Distributions' default: RW, 16 MiB, t = 0: fill once, read a third.
        #expect(PasswordHashLimits.yescryptWorkBytes(memoryBytes: 16 * mib, flavor: 47, p: 1, t: 0) == 16 * mib * 4 / 3)
        #expect(PasswordHashLimits.yescryptWorkBytes(memoryBytes: 16 * mib, flavor: 47, p: 4, t: 0) == 16 * mib * 4 / 3)
        #expect(PasswordHashLimits.yescryptWorkBytes(memoryBytes: mib, flavor: 47, p: 1, t: 4) == 4 * mib)
        #expect(PasswordHashLimits.yescryptWorkBytes(memoryBytes: mib, flavor: 1, p: 2, t: 1) == 5 * mib)
        #expect(PasswordHashLimits.yescryptWorkBytes(memoryBytes: mib, flavor: 0, p: 3, t: 0) == 6 * mib)
    }

    @Test("the default failure floor exceeds the costliest check the limits admit, and follows them")
    func failureFloor() {
        let limits = PasswordHashLimits.default
        #expect(limits.failureFloor > limits.costliestCheck)
        #expect(limits.costliestCheck <= .milliseconds(550), "about half a second of one core at most")
        #expect(limits.costliestChecks.allSatisfy { $0.cost <= limits.costliestCheck })
        var wider = limits
        wider.bcryptCost = 4...15
        #expect(wider.costliestCheck >= limits.costliestCheck * 3, "bcrypt 15 costs four times bcrypt 13")
        #expect(wider.failureFloor > wider.costliestCheck)
    }
}
