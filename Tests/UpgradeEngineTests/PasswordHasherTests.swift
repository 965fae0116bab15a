import Testing

@testable import UpgradeEngine

@Suite("Password hashing (argon2id)")
struct PasswordHasherTests {
    @Test("with a fixed salt, the hasher writes exactly argon2-cffi's PHC string", arguments: PasswordFixtures.vectors)
    func matchesArgon2Cffi(_ vector: PasswordFixtures.HasherVector) throws {
        let parameters = PasswordHasher.Parameters(
            memoryKiB: vector.memoryKiB,
            iterations: vector.iterations,
            parallelism: vector.parallelism
        )
        let hasher = try PasswordHasher(parameters: parameters)
        let salt = try #require([UInt8](hex: vector.saltHex))
        #expect(try hasher.hash(password: vector.password, salt: salt) == vector.hash)
    }

    @Test("the default parameters are the ones the first vector was made with")
    func defaultsMatchVector() throws {
        #expect(PasswordFixtures.vectors.count == 3)
        let vector = try #require(PasswordFixtures.vectors.first)
        let defaults = PasswordHasher.Parameters.default
        #expect(
            [defaults.memoryKiB, defaults.iterations, defaults.parallelism, defaults.saltLength, defaults.hashLength]
                == [vector.memoryKiB, vector.iterations, vector.parallelism, 16, 32]
        )
        #expect(PasswordHasher().parameters == defaults)
    }

    @Test("hashes round-trip through the verifier, with a fresh salt each time")
    func roundTrip() throws {
        let hasher = try PasswordHasher(parameters: .init(memoryKiB: 1024, iterations: 1))
        let verifier = PasswordVerifier()
        for password in ["correct horse battery staple", "", "p\u{e4}ssw\u{f6}rd \u{1f511}", "with\0nul"] {
            let first = try hasher.hash(password: password)
            let second = try hasher.hash(password: password)
            #expect(first != second, "salts repeat")
            #expect(first.hasPrefix("$argon2id$v=19$m=1024,t=1,p=1$"))
            #expect(try verifier.verify(password: password, encodedHash: first))
            #expect(try !verifier.verify(password: password + "x", encodedHash: first))
            #expect(try verifier.inspect(first).format == .argon2id)
        }
        let defaultHash = try PasswordHasher().hash(password: "pw")
        #expect(try verifier.inspect(defaultHash).costDescription == "m=19456 KiB, t=2, p=1")
        #expect(try verifier.verify(password: "pw", encodedHash: defaultHash))
    }

    @Test("parameters a verifier would refuse are refused when the hasher is made")
    func parameterBounds() {
        let refused: [PasswordHasher.Parameters] = [
            .init(memoryKiB: 262_145),
            .init(iterations: 0),
            .init(iterations: 11),
            .init(memoryKiB: 131_072, iterations: 4),
            .init(parallelism: 0),
            .init(memoryKiB: 8, parallelism: 2),
            .init(saltLength: 8),
            .init(hashLength: 65),
        ]
        for (position, parameters) in refused.enumerated() {
            let error = #expect(throws: PasswordHashError.self, "case \(position)") {
                try PasswordHasher(parameters: parameters)
            }
            #expect(error?.code == .parameterOutOfBounds, "case \(position)")
        }
        var limits = PasswordHashLimits()
        limits.argon2MaxMemoryKiB = 1 << 20
        limits.argon2MaxWorkKiB = 1 << 21
        #expect(throws: Never.self) { try PasswordHasher(parameters: .init(memoryKiB: 262_145), limits: limits) }
    }

    @Test("an over-long password is refused before hashing")
    func passwordLength() {
        let error = #expect(throws: PasswordHashError.self) {
            try PasswordHasher().hash(password: String(repeating: "a", count: 1025))
        }
        #expect(error?.code == .invalidPassword)
    }
}
