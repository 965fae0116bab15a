import Foundation
import Testing

@testable import UpgradeEngine

/// The fixtures in `Tests/Fixtures/apple` are minted by `mint_tokens.py` (joserfc / cryptography),
/// independently of this code.
struct TokenFixtures: Decodable {
    struct Valid: Decodable {
        let name: String
        let token: String
        let expected: [String: ExpectedValue]
    }
    struct Invalid: Decodable {
        let name: String
        let token: String
        let code: String
    }
    enum ExpectedValue: Decodable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
            } else if let int = try? container.decode(Int64.self) {
                self = .int(int)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        var json: JSONValue {
            switch self {
            case .string(let value): return .string(value)
            case .int(let value): return .integer(value)
            case .bool(let value): return .bool(value)
            }
        }
    }
    let now: Int64
    let leeway: Int64
    let issuer: String
    let audiences: [String]
    let nonce: String
    let valid: [Valid]
    let invalid: [Invalid]

    static func load() throws -> TokenFixtures {
        try Fixtures.json(TokenFixtures.self, "apple/tokens.json")
    }

    func verifier() throws -> IdentityTokenVerifier {
        IdentityTokenVerifier(
            keys: try JWKSet(json: Fixtures.data("apple/jwks.json")),
            policy: try IdentityTokenPolicy(allowedAudiences: Set(audiences), issuer: issuer, leeway: leeway)
        )
    }
}

@Suite("Identity token verification")
struct IdentityTokenTests {
    @Test("valid fixture tokens verify and surface exactly the expected claims")
    func validFixtures() throws {
        let fixtures = try TokenFixtures.load()
        let verifier = try fixtures.verifier()
        #expect(fixtures.valid.count == 2)
        for fixture in fixtures.valid {
            let claims = try verifier.verify(fixture.token, expectedNonce: fixtures.nonce, now: fixtures.now)
            let expected = JSONValue.object(
                fixture.expected.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, $0.value.json) }
            )
            let actual = JSONValue.object((claims.json.members ?? []).sorted { $0.key < $1.key })
            #expect(actual == expected, "\(fixture.name)")
        }
        let first = try verifier.verify(fixtures.valid[0].token, expectedNonce: fixtures.nonce, now: fixtures.now)
        #expect(first.transferSub == "001234.fedcba9876543210fedcba9876543210.5678")
        #expect(first.emailVerified && first.isPrivateEmail == true && first.realUserStatus == 2)
    }

    @Test("each negative fixture fails with its specific code")
    func invalidFixtures() throws {
        let fixtures = try TokenFixtures.load()
        let verifier = try fixtures.verifier()
        #expect(fixtures.invalid.count >= 11)
        for fixture in fixtures.invalid {
            do {
                _ = try verifier.verify(fixture.token, expectedNonce: fixtures.nonce, now: fixtures.now)
                Issue.record("\(fixture.name): accepted")
            } catch {
                #expect(error.code.description == fixture.code, "\(fixture.name): \(error.message)")
                #expect(!error.message.contains(fixtures.nonce), "\(fixture.name): nonce leaked into the message")
                #expect(!error.message.contains("0123456789abcdef"), "\(fixture.name): sub leaked into the message")
            }
        }
    }

    @Test("the nonce is only checked when one was issued")
    func nonceOptional() throws {
        let fixtures = try TokenFixtures.load()
        let verifier = try fixtures.verifier()
        let missingNonce = try #require(fixtures.invalid.first { $0.code == "nonceMissing" })
        _ = try verifier.verify(missingNonce.token, expectedNonce: nil, now: fixtures.now)
        _ = try verifier.verify(fixtures.valid[0].token, expectedNonce: nil, now: fixtures.now)
    }

    // MARK: Self-minted tokens for the boundaries

    static let signingKey = try! RSAPrivateKey(generatingBits: 2048)
    static let now: Int64 = 1_800_000_000

    static func verifier(leeway: Int64 = 60) throws -> IdentityTokenVerifier {
        IdentityTokenVerifier(
            keys: try JWKSet(keys: [("k", signingKey.publicKey)]),
            policy: try IdentityTokenPolicy(allowedAudiences: ["com.example.app"], leeway: leeway)
        )
    }

    static func token(
        header: JSONValue = .object(["kid": .string("k"), "alg": .string("RS256")]),
        _ claims: KeyValuePairs<String, JSONValue?>
    ) -> String {
        var members: [JSONValue.Member] = [
            .init("iss", .string("https://appleid.apple.com")), .init("aud", .string("com.example.app")),
            .init("exp", .integer(now + 600)), .init("iat", .integer(now)), .init("sub", .string("000001.abc.0001")),
            .init("nonce", .string("n1")),
        ]
        for (name, value) in claims {
            members.removeAll { $0.key == name }
            if let value { members.append(.init(name, value)) }
        }
        return JWSCompact.sign(header: header, payload: JSONValue.object(members).serialized()) {
            signingKey.signRS256($0)
        }
    }

    static func code(_ token: String, nonce: String? = "n1", now: Int64 = now, leeway: Int64 = 60) throws -> String? {
        let verifier = try verifier(leeway: leeway)
        do {
            _ = try verifier.verify(token, expectedNonce: nonce, now: now)
            return nil
        } catch {
            return error.code.description
        }
    }

    @Test("exp and iat at the leeway boundaries")
    func timeBoundaries() throws {
        let exp = Self.now + 600
        #expect(try Self.code(Self.token([:]), now: exp + 59) == nil)
        #expect(try Self.code(Self.token([:]), now: exp + 60) == "expired")
        #expect(try Self.code(Self.token([:]), now: exp + 10, leeway: 0) == "expired")
        #expect(try Self.code(Self.token(["iat": .integer(Self.now + 60)])) == nil)
        #expect(try Self.code(Self.token(["iat": .integer(Self.now + 61)])) == "issuedInFuture")
        #expect(try Self.code(Self.token(["nbf": .integer(Self.now + 61)])) == "notYetValid")
        #expect(try Self.code(Self.token(["exp": .double(Double(exp) + 0.9)]), now: exp + 59) == nil)
        #expect(try Self.code(Self.token(["exp": nil])) == "invalidClaim")
        #expect(try Self.code(Self.token(["iat": nil])) == "invalidClaim")
        #expect(try Self.code(Self.token([:]), now: .max) == "expired")
        #expect(try Self.code(Self.token([:]), now: .min) == "issuedInFuture", "overflow must not wrap around")
    }

    @Test("aud as a string or a one-element array; several audiences are refused")
    func audiences() throws {
        #expect(try Self.code(Self.token(["aud": .array([.string("com.example.app")])])) == nil)
        #expect(
            try Self.code(Self.token(["aud": .array([.string("com.example.app"), .string("com.other")])]))
                == "audienceNotAllowed"
        )
        #expect(try Self.code(Self.token(["aud": .array([])])) == "audienceNotAllowed")
        #expect(try Self.code(Self.token(["aud": nil])) == "audienceNotAllowed")
        #expect(try Self.code(Self.token(["aud": .string("com.example.App")])) == "audienceNotAllowed")
        #expect(try Self.code(Self.token(["aud": .integer(1)])) == "invalidClaim")
    }

    @Test("boolean claims: JSON booleans or the strings true/false; anything else is not verified")
    func booleans() throws {
        let verifier = try Self.verifier()
        let cases: [(JSONValue?, Bool)] = [
            (.bool(true), true), (.string("true"), true), (.bool(false), false), (.string("false"), false),
            (.string("TRUE"), false), (.string("yes"), false), (.integer(1), false), (nil, false), (.null, false),
        ]
        for (value, expected) in cases {
            let token = Self.token(["email_verified": value, "is_private_email": value])
            let claims = try verifier.verify(token, expectedNonce: "n1", now: Self.now)
            #expect(claims.emailVerified == expected, "\(String(describing: value))")
            #expect(claims.isPrivateEmail == (value == nil ? nil : expected), "\(String(describing: value))")
        }
    }

    @Test("claim types and duplicates")
    func claimTypes() throws {
        #expect(try Self.code(Self.token(["sub": .string("")])) == "missingSubject")
        #expect(try Self.code(Self.token(["sub": nil])) == "missingSubject")
        #expect(try Self.code(Self.token(["sub": .integer(5)])) == "invalidClaim")
        #expect(try Self.code(Self.token(["iss": nil])) == "wrongIssuer")
        #expect(try Self.code(Self.token(["iss": .string("https://appleid.apple.com/")])) == "wrongIssuer")
        #expect(try Self.code(Self.token(["nonce": .integer(1)])) == "invalidClaim")
        #expect(try Self.code(Self.token(["nonce": .string("n1 ")])) == "nonceMismatch")
        #expect(try Self.code(Self.token(["transfer_sub": .bool(true)])) == "invalidClaim")
        // Informational claims of an unexpected type are dropped, not fatal.
        let verifier = try Self.verifier()
        let claims = try verifier.verify(
            Self.token(["real_user_status": .string("2"), "auth_time": .string("x"), "c_hash": .integer(1)]),
            expectedNonce: "n1",
            now: Self.now
        )
        #expect(claims.realUserStatus == nil && claims.authTime == nil && claims.codeHash == nil)

        // A duplicated claim, by hand (the builder cannot produce one).
        let payload = Array(
            #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":1800000600,"iat":1800000000,"sub":"a","sub":"b","nonce":"n1"}"#
                .utf8
        )
        let header = JSONValue.object(["kid": .string("k"), "alg": .string("RS256")])
        let duplicate = JWSCompact.sign(header: header, payload: payload) { Self.signingKey.signRS256($0) }
        #expect(try Self.code(duplicate) == "invalidClaim")
        // A claim name spelled with an escape is the same claim (and still a duplicate).
        let escaped = Array(
            #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":1800000600,"iat":1800000000,"s\u0075b":"a","nonce":"n1"}"#
                .utf8
        )
        let escapedToken = JWSCompact.sign(header: header, payload: escaped) { Self.signingKey.signRS256($0) }
        #expect(try Self.verifier().verify(escapedToken, expectedNonce: "n1", now: Self.now).subject == "a")
        let escapedDuplicate = Array(
            #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":1800000600,"iat":1800000000,"sub":"a","s\u0075b":"b","nonce":"n1"}"#
                .utf8
        )
        let escapedDuplicateToken = JWSCompact.sign(header: header, payload: escapedDuplicate) {
            Self.signingKey.signRS256($0)
        }
        #expect(try Self.code(escapedDuplicateToken) == "invalidClaim")
        let notObject = JWSCompact.sign(header: header, payload: Array("[1]".utf8)) { Self.signingKey.signRS256($0) }
        #expect(try Self.code(notObject) == "malformed")
    }

    @Test("the header decides nothing but the key id")
    func header() throws {
        for alg in ["none", "HS256", "ES256", "RS512", "PS256", "rs256", "RS256 "] {
            let token = Self.token(header: .object(["kid": .string("k"), "alg": .string(alg)]), [:])
            #expect(try Self.code(token) == "unsupportedAlgorithm", "\(alg)")
        }
        #expect(try Self.code(Self.token(header: .object(["kid": .string("k")]), [:])) == "malformed")
        #expect(try Self.code(Self.token(header: .object(["alg": .string("RS256")]), [:])) == "unknownKeyID")
        #expect(
            try Self.code(Self.token(header: .object(["alg": .string("RS256"), "kid": .string("")]), [:]))
                == "unknownKeyID"
        )
        #expect(
            try Self.code(Self.token(header: .object(["alg": .string("RS256"), "kid": .integer(1)]), [:]))
                == "malformed"
        )
        let critical = JSONValue.object([
            "alg": .string("RS256"), "kid": .string("k"), "crit": .array([.string("exp")]),
        ])
        #expect(try Self.code(Self.token(header: critical, [:])) == "malformed")
        // An embedded key is ignored: the key set decides.
        let otherKey = try RSAPrivateKey(generatingBits: 2048)
        let embedded = JSONValue.object([
            "alg": .string("RS256"), "kid": .string("k"),
            "jwk": .object(["kty": .string("RSA"), "n": .string(otherKey.publicKey.jwkModulus), "e": .string("AQAB")]),
        ])
        let forged = JWSCompact.sign(
            header: embedded,
            payload: JSONValue.object(["iss": .string("https://appleid.apple.com")]).serialized()
        ) { otherKey.signRS256($0) }
        #expect(try Self.code(forged) == "badSignature")
    }

    @Test("structure: length bound, part count, base64url")
    func structure() throws {
        let valid = Self.token([:])
        #expect(try Self.code(valid) == nil)
        let parts = valid.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(try Self.code(parts[0] + "." + parts[1]) == "malformed")
        #expect(try Self.code("." + parts[1] + "." + parts[2]) == "malformed")
        #expect(try Self.code(parts[0] + ".." + parts[2]) == "malformed")
        #expect(try Self.code(parts[0] + " ." + parts[1] + "." + parts[2]) == "malformed")
        #expect(try Self.code(parts[0] + "." + parts[1] + "." + parts[2] + "=") == "malformed")
        #expect(try Self.code(parts[0] + "." + parts[1] + "+." + parts[2]) == "malformed")
        #expect(try Self.code(String(repeating: "a", count: 9000)) == "malformed")
        #expect(try Self.code("") == "malformed")
    }

    @Test("error messages quote safely")
    func quoting() {
        #expect(IdentityTokenError.quoted("RS256") == "\"RS256\"")
        #expect(IdentityTokenError.quoted("a\nb\"c\u{7f}é") == "\"a?b?c??\"")
        #expect(IdentityTokenError.quoted(String(repeating: "x", count: 100)).count == 64 + 3)
    }

    @Test("policy configuration is validated")
    func policy() {
        #expect(throws: IdentityTokenPolicy.ConfigurationError.self) { try IdentityTokenPolicy(allowedAudiences: []) }
        #expect(throws: IdentityTokenPolicy.ConfigurationError.self) { try IdentityTokenPolicy(allowedAudiences: [""]) }
        #expect(throws: IdentityTokenPolicy.ConfigurationError.self) {
            try IdentityTokenPolicy(allowedAudiences: ["a"], leeway: -1)
        }
        #expect(throws: IdentityTokenPolicy.ConfigurationError.self) {
            try IdentityTokenPolicy(allowedAudiences: ["a"], leeway: 601)
        }
    }
}
