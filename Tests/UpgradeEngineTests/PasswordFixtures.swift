import Testing

@testable import UpgradeEngine

/// `Fixtures/passwords/hashes.json`, written by `generate.py` with implementations independent of the
/// libraries the verifier links.
struct PasswordFixtures: Decodable {
    struct Entry: Decodable, Sendable, CustomTestStringConvertible {
        let format: String
        let scheme: String
        let password: String
        let hash: String
        let generator: String
        /// Other passwords the hash must accept (bcrypt's 72-byte prefix of a longer password).
        let alsoVerifies: [String]?
        /// Position in the file, so a failure names the entry without printing the password.
        var index = 0

        enum CodingKeys: String, CodingKey {
            case format, scheme, password, hash, generator, alsoVerifies
        }

        var testDescription: String { "#\(index) \(scheme) (\(generator))" }
    }

    struct HasherVector: Decodable, Sendable, CustomTestStringConvertible {
        let password: String
        let saltHex: String
        let memoryKiB: Int
        let iterations: Int
        let parallelism: Int
        let hash: String
        let generator: String

        var testDescription: String { "m=\(memoryKiB),t=\(iterations),p=\(parallelism) (\(generator))" }
    }

    let fixtures: [Entry]
    let hasherVectors: [HasherVector]

    /// Loaded once; an unreadable file yields no entries, which `fixtureFileIsComplete` reports.
    static let loaded: PasswordFixtures? = try? Fixtures.json(PasswordFixtures.self, "passwords/hashes.json")

    static var entries: [Entry] {
        (loaded?.fixtures ?? []).enumerated().map { index, entry in
            var entry = entry
            entry.index = index
            return entry
        }
    }

    static var vectors: [HasherVector] { loaded?.hasherVectors ?? [] }
}
