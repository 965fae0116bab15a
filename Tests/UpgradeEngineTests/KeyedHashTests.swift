import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

@Suite("Firebase scrypt and keyed HMAC hashes against independently generated fixtures")
struct KeyedHashTests {
    var verifier: PasswordVerifier {
        var verifier = PasswordVerifier()
        verifier.parameterSets = HashParameterSets(stored: KeyedHashFixtures.sets)
        return verifier
    }

    @Test("the fixture file covers both formats, every digest encoding and both salt positions")
    func fixtureFileIsComplete() {
        let entries = KeyedHashFixtures.entries
        #expect(entries.count == 21)
        #expect(Set(entries.map(\.format)) == ["firebase-scrypt", "hmac-sha256", "hmac-sha512"])
        #expect(KeyedHashFixtures.sets.count == 4)
        #expect(Set(KeyedHashFixtures.sets.values.map(\.summary)).count == 4)
        #expect(entries.contains { $0.password.isEmpty })
    }

    @Test(
        "each fixture verifies with its password, in stored form and in import form",
        arguments: KeyedHashFixtures.entries
    )
    func fixtureVerifies(_ entry: KeyedHashFixtures.Entry) throws {
        let inspection = try verifier.inspect(entry.hash)
        #expect(inspection.format.rawValue == entry.format)
        #expect(inspection.scheme == entry.scheme)
        #expect(inspection.costDescription.contains("parameter set \(entry.set)"))
        #expect(try verifier.verify(password: entry.password, encodedHash: entry.hash))
        var given = PasswordVerifier()
        given.parameterSets = HashParameterSets(given: [try #require(KeyedHashFixtures.sets[entry.set])])
        #expect(try given.verify(password: entry.password, encodedHash: entry.importForm))
        #expect(PasswordHash.binding(entry.importForm, to: entry.set) == entry.hash)
        #expect(PasswordHash.binding(entry.hash, to: entry.set) == nil)
    }

    @Test("each fixture rejects wrong passwords", arguments: KeyedHashFixtures.entries)
    func fixtureRejectsWrongPassword(_ entry: KeyedHashFixtures.Entry) throws {
        #expect(try !verifier.verify(password: "x" + entry.password, encodedHash: entry.hash))
        if !entry.password.isEmpty {
            #expect(try !verifier.verify(password: String(entry.password.dropLast()), encodedHash: entry.hash))
        }
    }

    @Test("a hash checked with another set of its kind does not match")
    func otherSetDoesNotMatch() throws {
        let hmac = try #require(KeyedHashFixtures.entries.first { $0.set == 3 && $0.format == "hmac-sha256" })
        let moved = hmac.hash.replacingOccurrences(of: "p=3$", with: "p=4$")
        #expect(try !verifier.verify(password: hmac.password, encodedHash: moved))
        let firebase = try #require(KeyedHashFixtures.entries.first { $0.set == 2 })
        let other = firebase.hash.replacingOccurrences(of: "p=2$", with: "p=1$")
        #expect(try !verifier.verify(password: firebase.password, encodedHash: other))
    }

    @Test(
        "a set that is missing, of the wrong kind, or not available at all is an operator problem, said without secrets"
    )
    func unavailableSets() throws {
        let firebase = try #require(KeyedHashFixtures.entries.first { $0.set == 1 })
        let hmac = try #require(KeyedHashFixtures.entries.first { $0.set == 3 })
        let cases: [(PasswordVerifier, String, String)] = [
            (verifier, firebase.hash.replacingOccurrences(of: "p=1$", with: "p=9$"), "set 9 is not stored"),
            (verifier, firebase.hash.replacingOccurrences(of: "p=1$", with: "p=3$"), "is not a firebase-scrypt set"),
            (verifier, hmac.hash.replacingOccurrences(of: "p=3$", with: "p=1$"), "is not a hmac set"),
            (PasswordVerifier(), firebase.hash, "this check has none"),
            (verifier, firebase.importForm, "no firebase-scrypt parameters were given"),
        ]
        for (verifier, hash, message) in cases {
            let error = #expect(throws: PasswordHashError.self) {
                try verifier.verify(password: firebase.password, encodedHash: hash)
            }
            #expect(error?.code == .parametersUnavailable)
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
            for secret in KeyedHashFixtures.sets.values.flatMap(Self.secrets) {
                #expect(error?.message.contains(secret) == false)
            }
        }
        // Without a source the hash still parses (db check, an import without parameters).
        #expect(try PasswordVerifier().inspect(firebase.hash).format == .firebaseScrypt)
    }

    static func secrets(_ set: HashParameterSet) -> [String] {
        switch set.values {
        case .firebaseScrypt(let signerKey, _, _, _): return [PasswordHashBase64.encode(signerKey, .standardPadded)]
        case .hmac(let key, _): return [PasswordHashBase64.encode(key, .standardPadded), key.hexString]
        }
    }

    @Test(
        "malformed hashes are refused with one specific message each",
        arguments: [
            ("$firebase-scrypt$", "expected [p=<parameter set>$]<salt>$<hash>"),
            ("$firebase-scrypt$p=1$c2FsdA==", "expected [p=<parameter set>$]<salt>$<hash>"),
            ("$firebase-scrypt$p=0$c2FsdA==$aGFzaA==", "p= must name a parameter set by its decimal id"),
            ("$firebase-scrypt$p=01$c2FsdA==$aGFzaA==", "p= must name a parameter set by its decimal id"),
            ("$firebase-scrypt$p=x$c2FsdA==$aGFzaA==", "p= must name a parameter set by its decimal id"),
            ("$firebase-scrypt$p=1$c2FsdA$aGFzaA==", "the salt must be canonical padded base64"),
            ("$firebase-scrypt$p=1$c2FsdA==$aGFzaA=", "the hash must be canonical padded base64"),
            ("$firebase-scrypt$p=1$$aGFzaA==", "the salt must be canonical padded base64"),
            ("$hmac-sha256$p=1$" + String(repeating: "a", count: 63), "the digest must be 64 hex digits"),
            ("$hmac-sha256$p=1$" + String(repeating: "g", count: 64), "the digest must be 64 hex digits"),
            ("$hmac-sha512$p=1$" + String(repeating: "a", count: 64), "the digest must be 128 hex digits"),
            (
                "$hmac-sha256$p=1$c2FsdA$" + String(repeating: "a", count: 64),
                "the salt must be canonical padded base64"
            ),
            ("$hmac-sha256$p=1$a$b$c", "expected [p=<parameter set>$][<salt>$]<digest>"),
            ("$hmac-sha256$", "the digest must be 64 hex digits"),
        ]
    )
    func malformed(_ hash: String, _ message: String) {
        let error = #expect(throws: PasswordHashError.self) { try verifier.inspect(hash) }
        #expect(error?.code == .malformed)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test(
        "a parameters file is read strictly, one message per problem, and never echoes a value",
        arguments: [
            ("[]", "the file must hold one JSON object"),
            ("{}", "give a firebase-scrypt or an hmac member"),
            (#"{"scrypt": {}}"#, "unknown member 'scrypt'"),
            (#"{"hmac": {"key": "c2VjcmV0", "extra": 1}}"#, "hmac has an unknown member 'extra'"),
            (#"{"hmac": {}}"#, "hmac.key is required"),
            (#"{"hmac": {"key": "c2VjcmV0IQ"}}"#, "hmac.key must be canonical padded base64"),
            (#"{"hmac": {"key": "c2VjcmV0", "saltPosition": "middle"}}"#, "hmac.saltPosition must be before or after"),
            (
                #"{"firebase-scrypt": {"signerKey": "c2VjcmV0", "saltSeparator": "Bw==", "rounds": 9, "memCost": 14}}"#,
                "firebase-scrypt.rounds must be an integer in 1...8"
            ),
            (
                #"{"firebase-scrypt": {"signerKey": "c2VjcmV0", "saltSeparator": "Bw==", "rounds": 8, "memCost": 15}}"#,
                "firebase-scrypt.memCost must be an integer in 1...14"
            ),
            (
                #"{"firebase-scrypt": {"signerKey": "c2VjcmV0", "rounds": 8, "memCost": 14}}"#,
                "firebase-scrypt.saltSeparator is required"
            ),
        ]
    )
    func parametersFile(_ text: String, _ message: String) {
        let error = #expect(throws: PasswordHashError.self) { try HashParameterSet.parseFile(Array(text.utf8)) }
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("c2VjcmV0") == false)
    }

    @Test("a set prints without its secrets and survives sealing; another key or id does not open it")
    func sealing() throws {
        let sets = try HashParameterSet.parseFile(Array(KeyedHashFixtures.parametersFile(1, 3).utf8))
        #expect(sets.map(\.kind) == [.firebaseScrypt, .hmac])
        let box = try SecretBox(key: Array(repeating: 7, count: 32))
        for (id, set) in zip([Int64(5), 6], sets) {
            for secret in Self.secrets(set) {
                #expect(!"\(set)".contains(secret))
                #expect(!String(reflecting: set).contains(secret))
            }
            let record = HashParameterSetRecord(
                id: id,
                kind: set.kind.rawValue,
                sealed: set.sealed(with: box, id: id),
                createdAt: 0
            )
            #expect(try HashParameterSet.open(record, with: box) == set)
            var moved = record
            moved.id = id + 10
            #expect(throws: PasswordHashError.self) { try HashParameterSet.open(moved, with: box) }
            let error = #expect(throws: PasswordHashError.self) {
                try HashParameterSet.open(record, with: SecretBox.developmentOnly())
            }
            #expect(error?.code == .parametersUnavailable)
            #expect(error?.message.contains("does not open with the configured secret key") == true)
        }
    }

    @Test("a Firebase set whose cost is over the scrypt limits is refused before hashing")
    func firebaseCostLimits() throws {
        let entry = try #require(KeyedHashFixtures.entries.first { $0.set == 1 })
        var limits = PasswordHashLimits()
        limits.scryptMaxLogN = 13
        var verifier = PasswordVerifier(limits: limits)
        verifier.parameterSets = HashParameterSets(stored: KeyedHashFixtures.sets)
        let error = #expect(throws: PasswordHashError.self) {
            try verifier.verify(password: entry.password, encodedHash: entry.hash)
        }
        #expect(error?.code == .parameterOutOfBounds)
        #expect(error?.message.contains("scryptMaxLogN") == true)
        #expect(throws: PasswordHashError.self) { try verifier.inspect(entry.hash) }
    }
}
