import Foundation
import Testing

@testable import UpgradeEngine

@Suite("RecoveryCodes")
struct RecoveryCodesTests {
    /// A row of `totp/recovery_code_hashes.json`, hashed by Python's hashlib from the documented format.
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let typed: String
        let normalized: String
        let hash: String
        var testDescription: String { typed }
    }

    static func vectors() throws -> [Vector] { try Fixtures.json([Vector].self, "totp/recovery_code_hashes.json") }

    @Test("generated codes are six groups of four symbols from the alphabet, and all differ")
    func shape() {
        let codes = RecoveryCodes.generate()
        #expect(codes.count == 10)
        #expect(Set(codes).count == 10)
        let alphabet = Set(RecoveryCodes.alphabet)
        for code in codes {
            let groups = code.split(separator: "-", omittingEmptySubsequences: false)
            #expect(groups.count == 6 && groups.allSatisfy { $0.count == 4 })
            #expect(groups.joined().allSatisfy { alphabet.contains($0) })
            #expect(RecoveryCodes.isWellFormed(code))
        }
        #expect(RecoveryCodes.generate(count: 3).count == 3)
        #expect(RecoveryCodes.generate(count: 0).isEmpty)
    }

    @Test("the alphabet has 32 symbols and none that read alike (0/O, 1/I)")
    func alphabet() {
        let symbols = Array(RecoveryCodes.alphabet)
        #expect(symbols.count == 32 && Set(symbols).count == 32)
        for ambiguous: Character in ["0", "O", "1", "I"] {
            #expect(!symbols.contains(ambiguous))
        }
        // 24 symbols of 5 bits: at least 112 bits per code.
        #expect(RecoveryCodes.length * 5 >= 112)
    }

    @Test("every symbol of the alphabet is used (no bias towards part of it)")
    func everySymbolUsed() {
        // 4800 symbols: the chance that a uniform draw misses one of 32 is about 32 * (31/32)^4800, below 10^-60.
        let used = Set(RecoveryCodes.generate(count: 200).joined().filter { $0 != "-" })
        #expect(used == Set(RecoveryCodes.alphabet))
    }

    @Test("hashes agree with an independent implementation of the documented format", arguments: try vectors())
    func knownHash(_ vector: Vector) {
        #expect(RecoveryCodes.normalize(vector.typed) == vector.normalized)
        #expect(RecoveryCodes.hash(vector.typed) == vector.hash)
        #expect(RecoveryCodes.matches(vector.typed, hash: vector.hash))
    }

    @Test("a code matches its hash however it is typed", arguments: [false, true])
    func matchesTypedForms(lowercase: Bool) {
        let code = RecoveryCodes.generate(count: 1)[0]
        let stored = RecoveryCodes.hash(code)
        #expect(stored.count == 64 && stored.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        let compact = code.replacingOccurrences(of: "-", with: "")
        let spaced = code.replacingOccurrences(of: "-", with: " ")
        for typed in [code, compact, spaced, " \(code) ", "\t\(compact)"] {
            let form = lowercase ? typed.lowercased() : typed
            #expect(RecoveryCodes.matches(form, hash: stored))
            #expect(RecoveryCodes.hash(form) == stored)
        }
    }

    @Test("a different code, a changed symbol or a malformed code does not match")
    func mismatches() {
        let codes = RecoveryCodes.generate(count: 2)
        let stored = RecoveryCodes.hash(codes[0])
        #expect(!RecoveryCodes.matches(codes[1], hash: stored))
        var symbols = Array(RecoveryCodes.normalize(codes[0]))
        symbols[23] = symbols[23] == "Z" ? "Y" : "Z"
        #expect(!RecoveryCodes.matches(String(symbols), hash: stored))
        #expect(
            !RecoveryCodes.matches(String(symbols.dropLast()), hash: RecoveryCodes.hash(String(symbols.dropLast())))
        )
        #expect(!RecoveryCodes.matches("", hash: RecoveryCodes.hash("")))
        #expect(!RecoveryCodes.matches(codes[0], hash: stored.uppercased()))
        #expect(!RecoveryCodes.matches(codes[0], hash: ""))
    }

    @Test(
        "malformed input is never well formed, even when its hash is the stored one",
        arguments: [
            "", "2222-2222-2222-2222-2222-222", "2222-2222-2222-2222-2222-22222", "0222-2222-2222-2222-2222-2222",
            "O222-2222-2222-2222-2222-2222", "1222-2222-2222-2222-2222-2222", "I222-2222-2222-2222-2222-2222",
            "2222_2222_2222_2222_2222_2222", "２222-2222-2222-2222-2222-2222",
        ]
    )
    func malformed(_ code: String) {
        #expect(!RecoveryCodes.isWellFormed(code))
        #expect(!RecoveryCodes.matches(code, hash: RecoveryCodes.hash(code)))
    }

    @Test("hashing is domain-separated from plain SHA-256")
    func domainSeparated() {
        let code = "2222-2222-2222-2222-2222-2222"
        #expect(RecoveryCodes.hash(code) != Digest.sha256(RecoveryCodes.normalize(code)).hexString)
        #expect(RecoveryCodes.hash(code) != Digest.sha256(code).hexString)
    }
}
