import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

@Suite("Sign-in nonces")
struct SignInNoncesTests {
    static let now: Int64 = 1_800_000_000
    static let nonces = SignInNonces(secrets: try! SecretBox(key: [UInt8](repeating: 7, count: 32)))

    @Test("an issued nonce checks as valid until it expires, then as expired")
    func lifetime() {
        let (nonce, expiresAt) = Self.nonces.issue(now: Self.now)
        #expect(expiresAt == Self.now + 600)
        #expect(nonce.utf8.count == 76 && nonce.utf8.allSatisfy { $0 != UInt8(ascii: "=") })
        #expect(Self.nonces.check(nonce, now: Self.now) == .valid(expiresAt: expiresAt))
        #expect(Self.nonces.check(nonce, now: expiresAt - 1) == .valid(expiresAt: expiresAt))
        #expect(Self.nonces.check(nonce, now: expiresAt) == .expired)
        #expect(Self.nonces.issue(now: Self.now).nonce != nonce, "random per issue")
        // A nonce accepted at any moment of its life is remembered at least until it expires.
        #expect(Self.nonces.usedRecordExpiry(acceptedAt: expiresAt - 1) >= expiresAt)
        #expect(Self.nonces.usedRecordExpiry(acceptedAt: Self.now) == expiresAt)
    }

    @Test("any changed byte, another key, or a malformed value is not ours")
    func forgeries() throws {
        let (nonce, _) = Self.nonces.issue(now: Self.now)
        let bytes = try #require(Base64URL.decode(nonce))
        for index in bytes.indices {
            var changed = bytes
            changed[index] ^= 0x01
            #expect(Self.nonces.check(Base64URL.encode(changed), now: Self.now) == .unknown, "byte \(index)")
        }
        // A later expiry written into the nonce does not survive the tag.
        var extended = bytes
        extended[1] = 0x7F
        #expect(Self.nonces.check(Base64URL.encode(extended), now: Self.now) == .unknown)
        let other = SignInNonces(secrets: try SecretBox(key: [UInt8](repeating: 8, count: 32)))
        #expect(other.check(nonce, now: Self.now) == .unknown)
        for bad in ["", "n-1", nonce + "A", String(nonce.dropLast()), nonce.replacingOccurrences(of: "A", with: "+")] {
            #expect(Self.nonces.check(bad, now: Self.now) == .unknown)
        }
    }

    @Test("across a key rotation: a nonce issued under the old key checks while that key is listed, not after")
    func rotation() throws {
        let old = [UInt8](repeating: 7, count: 32)
        let new = [UInt8](repeating: 9, count: 32)
        let secrets = try SecretBox(keys: [("k1", old)])
        let nonces = SignInNonces(secrets: secrets)
        let (before, expiresAt) = nonces.issue(now: Self.now)
        secrets.replaceKeys(with: try SecretBox(keys: [("k2", new), ("k1", old)]))
        #expect(nonces.check(before, now: Self.now) == .valid(expiresAt: expiresAt))
        let (after, _) = nonces.issue(now: Self.now)
        let onlyNew = SignInNonces(secrets: try SecretBox(keys: [("k2", new)]))
        #expect(onlyNew.check(after, now: Self.now) != .unknown, "issued under the new key")
        secrets.replaceKeys(with: try SecretBox(keys: [("k2", new)]))
        #expect(nonces.check(before, now: Self.now) == .unknown)
        #expect(nonces.check(after, now: Self.now) != .unknown)
    }

    @Test("the verifier accepts a token carrying an issued nonce and surfaces it; refuses a foreign one")
    func verifierExpectation() throws {
        let verifier = try IdentityTokenTests.verifier()
        let now = IdentityTokenTests.now
        let (nonce, _) = Self.nonces.issue(now: now)
        let token = IdentityTokenTests.token(["nonce": .string(nonce)])
        let claims = try verifier.verify(token, nonce: .issuedForSignIn(Self.nonces), now: now)
        #expect(claims.checkedNonce == nonce)
        #expect(!claims.json.serializedString.contains(nonce), "the nonce stays out of the claims' JSON")
        #expect(try verifier.verify(token, nonce: nil, now: now).checkedNonce == nil)
        let foreign = IdentityTokenTests.token(["nonce": .string("made-up")])
        #expect {
            try verifier.verify(foreign, nonce: .issuedForSignIn(Self.nonces), now: now)
        } throws: { ($0 as? IdentityTokenError)?.code == .nonceMismatch }
        let missing = IdentityTokenTests.token(["nonce": nil])
        #expect {
            try verifier.verify(missing, nonce: .issuedForSignIn(Self.nonces), now: now)
        } throws: { ($0 as? IdentityTokenError)?.code == .nonceMissing }
    }

    @Test("the store spends a nonce once and forgets expired ones", arguments: Backend.all)
    func singleUse(_ backend: Backend) throws {
        let db = try backend.database()
        let first = try db.store.write { try $0.useSignInNonce(hash: "a", expiresAt: Self.now + 600, now: Self.now) }
        let second = try db.store.write { try $0.useSignInNonce(hash: "a", expiresAt: Self.now + 600, now: Self.now) }
        #expect(first && !second)
        // Past its expiry the row is pruned by the next use (the nonce itself is refused as expired).
        _ = try db.store.write { try $0.useSignInNonce(hash: "b", expiresAt: Self.now + 1200, now: Self.now + 600) }
        let remaining = try db.store.read { tx in
            try TestDatabase.raw(tx, "SELECT count(*) FROM used_sign_in_nonces").first?.first
        }
        #expect(remaining == .integer(1))
    }
}
