import Testing

@testable import UpgradeEngine

@Suite("Password verification against independently generated hashes")
struct PasswordVerifierTests {
    let verifier = PasswordVerifier()

    @Test("the fixture file is present and covers every format and scheme")
    func fixtureFileIsComplete() throws {
        let entries = PasswordFixtures.entries
        #expect(entries.count == 105)
        // The formats whose parameters are the project's have their own file (KeyedHashTests).
        let keyed = Set(KeyedHashFixtures.entries.map(\.format))
        #expect(Set(entries.map(\.format)).union(keyed) == Set(PasswordHashFormat.allCases.map(\.rawValue)))
        #expect(Set(entries.map(\.format)).isDisjoint(with: keyed))
        let schemes: Set<String> = [
            "$2a$", "$2b$", "$2y$", "$argon2id$", "$argon2i$", "$scrypt$", "$7$", "pbkdf2_sha256$", "pbkdf2_sha1$",
            "$pbkdf2$", "$pbkdf2-sha256$", "$pbkdf2-sha512$", "$6$", "$5$", "$1$", "$y$", "{SSHA}", "{SSHA256}",
            "{SSHA512}", "{CRYPT}$6$", "{CRYPT}$1$", "{CRYPT}$2b$", "{CRYPT}$y$", "$P$", "$H$", "$S$", "bcrypt_sha256$",
            "argon2$argon2id$",
        ]
        #expect(Set(entries.map(\.scheme)) == schemes)
        #expect(entries.contains { $0.password.isEmpty }, "an empty password is covered")
        #expect(
            entries.contains { $0.password.unicodeScalars.contains { $0.value > 0xffff } },
            "4-byte UTF-8 is covered"
        )
    }

    @Test("each fixture verifies with its password and is inspected as its format", arguments: PasswordFixtures.entries)
    func fixtureVerifies(_ entry: PasswordFixtures.Entry) throws {
        let inspection = try verifier.inspect(entry.hash)
        #expect(inspection.format.rawValue == entry.format)
        #expect(inspection.scheme == entry.scheme)
        #expect(try verifier.verify(password: entry.password, encodedHash: entry.hash))
        for (position, other) in (entry.alsoVerifies ?? []).enumerated() {
            #expect(try verifier.verify(password: other, encodedHash: entry.hash), "alternative password \(position)")
        }
    }

    @Test("each fixture rejects wrong passwords", arguments: PasswordFixtures.entries)
    func fixtureRejectsWrongPassword(_ entry: PasswordFixtures.Entry) throws {
        #expect(try !verifier.verify(password: "x" + entry.password, encodedHash: entry.hash), "prefixed")
        if !entry.password.isEmpty && entry.alsoVerifies == nil {
            #expect(
                try !verifier.verify(password: String(entry.password.dropLast()), encodedHash: entry.hash),
                "shortened"
            )
        }
    }

    @Test("bcrypt reads the first 72 bytes, as libxcrypt and OpenBSD do")
    func bcryptTruncation() throws {
        let entry = try #require(PasswordFixtures.entries.first { $0.alsoVerifies != nil })
        #expect(entry.password.utf8.count > 72)
        #expect(try verifier.verify(password: entry.password + "anything", encodedHash: entry.hash))
        #expect(try !verifier.verify(password: String(entry.password.prefix(71)), encodedHash: entry.hash))
    }

    @Test("Django's bcrypt_sha256 checks the whole password, NUL bytes and all, where plain bcrypt stops at 72 bytes")
    func bcryptSHA256Prehash() throws {
        let entries = PasswordFixtures.entries.filter { $0.scheme == "bcrypt_sha256$" }
        let long = try #require(entries.first { $0.password.utf8.count > 72 })
        #expect(try verifier.verify(password: long.password, encodedHash: long.hash))
        #expect(try !verifier.verify(password: String(long.password.prefix(72)), encodedHash: long.hash))
        #expect(try !verifier.verify(password: long.password + "anything", encodedHash: long.hash))
        let entry = try #require(entries.first { !$0.password.isEmpty })
        #expect(try !verifier.verify(password: entry.password + "\0", encodedHash: entry.hash))
        // The stored bcrypt hash is of the hex digest: the digest itself is not the password.
        let hex = Digest.sha256(entry.password).hexString
        #expect(try !verifier.verify(password: hex, encodedHash: entry.hash))
        #expect(try verifier.verify(password: hex, encodedHash: String(entry.hash.dropFirst("bcrypt_sha256$".count))))
    }

    @Test("phpass and Drupal hashes check long passwords at low costs and refuse them at the top cost before hashing")
    func phpassPasswordLength() throws {
        let wordpress = try #require(PasswordFixtures.entries.first { $0.scheme == "$P$" })
        #expect(try !verifier.verify(password: String(repeating: "p", count: 1024), encodedHash: wordpress.hash))
        let top = "$P$I" + String(wordpress.hash.dropFirst(4))
        #expect(try !verifier.verify(password: String(repeating: "p", count: 103), encodedHash: top))
        let error = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: String(repeating: "p", count: 104), encodedHash: top)
        }
        #expect(error?.code == .invalidPassword)
        #expect(error?.message.contains("phpassCost") == true)
        // Drupal itself refuses passwords over 512 bytes, whatever the cost.
        let drupal = try #require(PasswordFixtures.entries.first { $0.scheme == "$S$" })
        #expect(try !verifier.verify(password: String(repeating: "p", count: 512), encodedHash: drupal.hash))
        let tooLong = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: String(repeating: "p", count: 513), encodedHash: drupal.hash)
        }
        #expect(tooLong?.code == .invalidPassword)
    }

    @Test("many verifications at once on many threads give the same answers")
    func concurrentVerification() async throws {
        let entries = PasswordFixtures.entries
        #expect(!entries.isEmpty)
        let verifier = self.verifier
        let mismatches = await withTaskGroup(of: Int?.self) { group in
            for round in 0..<2 {
                for entry in entries {
                    group.addTask {
                        let password = round == 0 ? entry.password : "x" + entry.password
                        let result = try? verifier.verify(password: password, encodedHash: entry.hash)
                        return result == (round == 0) ? nil : entry.index
                    }
                }
            }
            var failed: [Int] = []
            for await index in group {
                if let index { failed.append(index) }
            }
            return failed.sorted()
        }
        #expect(mismatches == [], "fixture indices with a wrong answer under concurrency")
    }

    @Test("a NUL byte is refused for C-string formats and hashed as data elsewhere")
    func nulBytePassword() throws {
        let entries = PasswordFixtures.entries
        let bcrypt = try #require(entries.first { $0.scheme == "$2b$" && !$0.password.isEmpty })
        let error = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: bcrypt.password + "\0tail", encodedHash: bcrypt.hash)
        }
        #expect(error?.code == .invalidPassword)
        let argon2 = try #require(entries.first { $0.scheme == "$argon2id$" && !$0.password.isEmpty })
        #expect(try !verifier.verify(password: argon2.password + "\0tail", encodedHash: argon2.hash))
        let pbkdf2 = try #require(entries.first { $0.scheme == "pbkdf2_sha256$" && !$0.password.isEmpty })
        #expect(try !verifier.verify(password: pbkdf2.password + "\0tail", encodedHash: pbkdf2.hash))
        // HMAC pads short keys with zero bytes, so for PBKDF2 (here as in Django and hashlib) a
        // trailing NUL is the same key: verification follows the algorithm, not string equality.
        #expect(try verifier.verify(password: pbkdf2.password + "\0", encodedHash: pbkdf2.hash))
    }

    @Test("passwords longer than the limits are refused before hashing")
    func passwordLength() throws {
        let entries = PasswordFixtures.entries
        let limit = PasswordHashLimits.default.maxPasswordBytes
        for scheme in ["$argon2id$", "pbkdf2_sha256$", "$6$", "$2b$"] {
            let entry = try #require(entries.first { $0.scheme == scheme })
            let error = #expect(throws: PasswordHashError.self, "\(scheme)") {
                try verifier.verify(password: String(repeating: "a", count: limit + 1), encodedHash: entry.hash)
            }
            #expect(error?.code == .invalidPassword, "\(scheme)")
            #expect(error.map { !$0.message.contains("aaaa") } ?? false, "\(scheme): message quotes the password")
        }
        // At the general limit, formats without their own cap still compute (and do not match)…
        let pbkdf2 = try #require(entries.first { $0.scheme == "$pbkdf2-sha256$" })
        #expect(try !verifier.verify(password: String(repeating: "a", count: limit), encodedHash: pbkdf2.hash))
        // …while libxcrypt's formats stop at its 511 bytes.
        let shaCrypt = try #require(entries.first { $0.scheme == "$6$" })
        let error = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: String(repeating: "a", count: 512), encodedHash: shaCrypt.hash)
        }
        #expect(error?.code == .invalidPassword)
        #expect(try !verifier.verify(password: String(repeating: "a", count: 511), encodedHash: shaCrypt.hash))
    }

    @Test("verifyDummy spends an argon2id verification with the hasher's parameters")
    func dummyMatchesHasher() throws {
        #expect(verifier.dummy.inspection.format == .argon2id)
        #expect(verifier.dummy.inspection.costDescription == "m=19456 KiB, t=2, p=1")
        let custom = PasswordHasher.Parameters(memoryKiB: 1024, iterations: 3, parallelism: 2)
        let customVerifier = PasswordVerifier(dummyParameters: custom)
        #expect(customVerifier.dummy.inspection.costDescription == "m=1024 KiB, t=3, p=2")
        // The dummy's salt and output are random: no password, including the empty one, matches it.
        #expect(try !customVerifier.dummy.verify(password: []))
        customVerifier.verifyDummy(password: "anything")
    }
}
