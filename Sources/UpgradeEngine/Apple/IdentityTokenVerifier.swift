#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Verifies Sign in with Apple identity tokens (docs/apple-protocol.md §1.4).
///
/// The order is fixed and every step can only reject:
/// 1. the token is at most `policy.maxTokenLength` bytes and splits into three non-empty,
///    canonical base64url parts;
/// 2. the header is a JSON object whose `alg` is exactly `RS256`: the only algorithm ever run is
///    RS256 with an RSA key from the key set, so `none`, HMAC with the public key as secret
///    (`HS256`), or any other algorithm never reaches a verifier;
/// 3. the header's `kid` names a key in the set (no default key, no key from the token itself);
/// 4. the signature verifies over `header.payload` — before any claim is decoded or trusted;
/// 5. the claims: `iss` exact; `aud` allowed; `exp > now - leeway`; `iat <= now + leeway`;
///    `nbf` (if present) `<= now + leeway`; `sub` non-empty; the nonce.
///
/// `aud` may be a string (what Apple sends) or, per RFC 7519 §4.1.3, an array; an array must hold
/// exactly one allowed client id, because the code exchange needs a single `client_id` and OpenID
/// Connect requires rejecting tokens that also name audiences we do not trust.
///
/// The nonce: when `expectedNonce` is given, the claim must be present and equal it byte for
/// byte (compared in constant time). Apple's `nonce_supported` only says whether a *missing* nonce
/// may be tolerated; this server issues a nonce for every sign-in, so a missing nonce always
/// fails (`nonceMissing`). With `expectedNonce == nil` the nonce claim is not checked.
public struct IdentityTokenVerifier: Sendable {
    public let keys: JWKSet
    public let policy: IdentityTokenPolicy

    public init(keys: JWKSet, policy: IdentityTokenPolicy) {
        self.keys = keys
        self.policy = policy
    }

    public func verify(
        _ token: String,
        expectedNonce: String?,
        now: Int64
    ) throws(IdentityTokenError)
        -> AppleIdentityClaims
    {
        try verify(token, nonce: expectedNonce.map { .exact($0) }, now: now)
    }

    /// How the issued nonce is known: the value itself, or (what the upgrade service stores) the
    /// lowercase hex SHA-256 of it. Either way the claim must be present and match in constant time.
    public enum NonceExpectation: Sendable {
        case exact(String)
        case sha256Hex(String)
        /// Any unexpired nonce `SignInNonces` issued; its single use is the caller's to record.
        case issuedForSignIn(SignInNonces)

        func matches(_ claim: String, now: Int64) -> Bool {
            switch self {
            case .exact(let expected): ConstantTime.equals(claim.utf8, expected.utf8)
            case .sha256Hex(let digest): ConstantTime.equals(Digest.sha256(claim).hexString.utf8, digest.utf8)
            case .issuedForSignIn(let nonces):
                if case .valid = nonces.check(claim, now: now) { true } else { false }
            }
        }
    }

    public func verify(
        _ token: String,
        nonce expectedNonce: NonceExpectation?,
        now: Int64
    ) throws(IdentityTokenError)
        -> AppleIdentityClaims
    {
        let jws = try Self.verifySignature(token, keys: keys, maximumLength: policy.maxTokenLength)
        // Only now is the payload read.
        let raw = try RawClaims(jws.payload)
        return try check(raw, expectedNonce: expectedNonce, now: now)
    }

    /// Steps 1–4 for any JWS Apple signs with its published keys (identity tokens and server-to-server
    /// notifications): strict compact parsing, `alg` exactly RS256, `kid` resolving in `keys`, and the
    /// signature verified. Nothing of the payload has been read when this returns.
    public static func verifySignature(
        _ token: String,
        keys: JWKSet,
        maximumLength: Int,
        what: String = "identity token"
    ) throws(IdentityTokenError) -> JWSCompact {
        let jws: JWSCompact
        do {
            jws = try JWSCompact(parsing: token, maximumLength: maximumLength)
        } catch {
            throw IdentityTokenError(.malformed, "\(what) is malformed: \(error.message)")
        }
        let header: JWSHeader
        do {
            header = try JWSHeader(json: jws.header)
        } catch {
            throw IdentityTokenError(.malformed, "\(what) is malformed: \(error.message)")
        }
        guard header.algorithm == "RS256" else {
            throw IdentityTokenError(
                .unsupportedAlgorithm,
                "\(what) uses alg \(IdentityTokenError.quoted(header.algorithm)); only RS256 is accepted"
            )
        }
        guard let keyID = header.keyID, !keyID.isEmpty else {
            throw IdentityTokenError(.unknownKeyID, "\(what) header has no kid")
        }
        guard let key = keys[keyID] else {
            throw IdentityTokenError(
                .unknownKeyID,
                "no key with kid \(IdentityTokenError.quoted(keyID)) in the key set (Apple rotates keys: refresh the JWKS)"
            )
        }
        let signatureValid = jws.signature.withUnsafeBytes { signature in
            jws.signingInput.withUnsafeBytes { message in key.verify(signature: signature, message: message) }
        }
        guard signatureValid else {
            throw IdentityTokenError(
                .badSignature,
                "\(what) signature does not verify with key \(IdentityTokenError.quoted(keyID))"
            )
        }

        return jws
    }

    private func check(
        _ raw: RawClaims,
        expectedNonce: NonceExpectation?,
        now: Int64
    ) throws(IdentityTokenError)
        -> AppleIdentityClaims
    {
        if let problem = raw.problem { throw IdentityTokenError(.invalidClaim, problem) }

        guard let issuer = raw.issuer else { throw IdentityTokenError(.wrongIssuer, "identity token has no iss claim") }
        guard issuer == policy.issuer else {
            throw IdentityTokenError(
                .wrongIssuer,
                "iss is \(IdentityTokenError.quoted(issuer)), expected \(IdentityTokenError.quoted(policy.issuer))"
            )
        }

        guard let audiences = raw.audiences, !audiences.isEmpty else {
            throw IdentityTokenError(.audienceNotAllowed, "identity token has no aud claim")
        }
        guard audiences.count == 1 else {
            throw IdentityTokenError(
                .audienceNotAllowed,
                "aud names \(audiences.count) audiences; an identity token must name exactly one client id"
            )
        }
        let audience = audiences[0]
        guard policy.allowedAudiences.contains(audience) else {
            throw IdentityTokenError(
                .audienceNotAllowed,
                "aud \(IdentityTokenError.quoted(audience)) is not one of the configured client ids"
            )
        }

        let (earliest, overflowLow) = now.subtractingReportingOverflow(policy.leeway)
        let (latest, overflowHigh) = now.addingReportingOverflow(policy.leeway)
        guard let expiresAt = raw.expiresAt else {
            throw IdentityTokenError(.invalidClaim, "identity token has no exp claim")
        }
        guard overflowLow || expiresAt > earliest else {
            throw IdentityTokenError(
                .expired,
                "identity token expired at \(expiresAt) (now \(now), leeway \(policy.leeway) s)"
            )
        }
        guard let issuedAt = raw.issuedAt else {
            throw IdentityTokenError(.invalidClaim, "identity token has no iat claim")
        }
        guard overflowHigh || issuedAt <= latest else {
            throw IdentityTokenError(
                .issuedInFuture,
                "identity token is issued at \(issuedAt), in the future (now \(now), leeway \(policy.leeway) s)"
            )
        }
        if let notBefore = raw.notBefore, !overflowHigh, notBefore > latest {
            throw IdentityTokenError(
                .notYetValid,
                "identity token is not valid before \(notBefore) (now \(now), leeway \(policy.leeway) s)"
            )
        }

        guard let subject = raw.subject, !subject.isEmpty else {
            throw IdentityTokenError(.missingSubject, "identity token has no sub claim (or an empty one)")
        }

        if let expectedNonce {
            guard let nonce = raw.nonce else {
                throw IdentityTokenError(
                    .nonceMissing,
                    "identity token has no nonce claim, but a nonce was issued for this sign-in"
                )
            }
            guard expectedNonce.matches(nonce, now: now) else {
                throw IdentityTokenError(
                    .nonceMismatch,
                    "identity token nonce does not match the nonce issued (or that nonce has expired)"
                )
            }
        }

        return AppleIdentityClaims(
            issuer: issuer,
            audience: audience,
            subject: subject,
            issuedAt: issuedAt,
            expiresAt: expiresAt,
            authTime: raw.authTime,
            email: raw.email,
            emailVerified: raw.emailVerified ?? false,
            isPrivateEmail: raw.isPrivateEmail,
            nonceSupported: raw.nonceSupported,
            realUserStatus: raw.realUserStatus,
            transferSub: raw.transferSub,
            organizationID: raw.organizationID,
            codeHash: raw.codeHash,
            accessTokenHash: raw.accessTokenHash,
            checkedNonce: expectedNonce == nil ? nil : raw.nonce
        )
    }
}

/// The payload read member by member straight into typed fields, without an intermediate tree:
/// this runs on every sign-in and must cost little next to the RSA verification.
///
/// Claims that identify the user or bound the token (`iss`, `aud`, `sub`, `exp`, `iat`, `nbf`,
/// `nonce`, `transfer_sub`, `email`) must have their documented JSON type, or the token is
/// rejected. The boolean claims follow docs/apple-protocol.md §1.3. Informational claims (`auth_time`,
/// `real_user_status`, `org_id`, `c_hash`, `at_hash`) of an unexpected type are dropped rather
/// than failing a sign-in. A known claim appearing twice is rejected.
private struct RawClaims {
    var issuer: String?
    var audiences: [String]?
    var subject: String?
    var issuedAt: Int64?
    var expiresAt: Int64?
    var notBefore: Int64?
    var nonce: String?
    var email: String?
    var emailVerified: Bool?
    var isPrivateEmail: Bool?
    var nonceSupported: Bool?
    var realUserStatus: Int?
    var transferSub: String?
    var authTime: Int64?
    var organizationID: String?
    var codeHash: String?
    var accessTokenHash: String?
    /// The first type or duplication problem, reported after parsing as `invalidClaim`.
    var problem: String?

    init(_ payload: [UInt8]) throws(IdentityTokenError) {
        var claims = RawClaims.empty
        do {
            try payload.withUnsafeBufferPointer { buffer throws(JSONValueError) in
                var reader = JSONValueReader(buffer)
                var seen: UInt32 = 0
                try reader.readObjectRawKeys { key, reader throws(JSONValueError) in
                    try claims.read(key, &reader, seen: &seen)
                }
                try reader.finish()
            }
        } catch {
            throw IdentityTokenError(.malformed, "identity token payload is not a JSON object: \(error)")
        }
        self = claims
    }

    private static let empty = RawClaims(
        issuer: nil,
        audiences: nil,
        subject: nil,
        issuedAt: nil,
        expiresAt: nil,
        notBefore: nil,
        nonce: nil,
        email: nil,
        emailVerified: nil,
        isPrivateEmail: nil,
        nonceSupported: nil,
        realUserStatus: nil,
        transferSub: nil,
        authTime: nil,
        organizationID: nil,
        codeHash: nil,
        accessTokenHash: nil,
        problem: nil
    )

    private init(
        issuer: String?,
        audiences: [String]?,
        subject: String?,
        issuedAt: Int64?,
        expiresAt: Int64?,
        notBefore: Int64?,
        nonce: String?,
        email: String?,
        emailVerified: Bool?,
        isPrivateEmail: Bool?,
        nonceSupported: Bool?,
        realUserStatus: Int?,
        transferSub: String?,
        authTime: Int64?,
        organizationID: String?,
        codeHash: String?,
        accessTokenHash: String?,
        problem: String?
    ) {
        self.issuer = issuer
        self.audiences = audiences
        self.subject = subject
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.nonce = nonce
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.nonceSupported = nonceSupported
        self.realUserStatus = realUserStatus
        self.transferSub = transferSub
        self.authTime = authTime
        self.organizationID = organizationID
        self.codeHash = codeHash
        self.accessTokenHash = accessTokenHash
        self.problem = problem
    }

    private enum Claim: UInt32 {
        case iss, aud, sub, iat, exp, nbf, nonce, email, emailVerified, isPrivateEmail, nonceSupported,
            realUserStatus, transferSub, authTime, orgID, cHash, atHash

        /// Matched on the raw name bytes (length first), without building a `String`.
        init?(_ name: UnsafeBufferPointer<UInt8>) {
            func matches(_ literal: StaticString) -> Bool {
                literal.withUTF8Buffer { literal in
                    literal.count == name.count && memcmp(literal.baseAddress!, name.baseAddress!, name.count) == 0
                }
            }
            switch name.count {
            case 3:
                if matches("iss") {
                    self = .iss
                } else if matches("aud") {
                    self = .aud
                } else if matches("sub") {
                    self = .sub
                } else if matches("iat") {
                    self = .iat
                } else if matches("exp") {
                    self = .exp
                } else if matches("nbf") {
                    self = .nbf
                } else {
                    return nil
                }
            case 5:
                if matches("nonce") {
                    self = .nonce
                } else if matches("email") {
                    self = .email
                } else {
                    return nil
                }
            case 6:
                if matches("c_hash") {
                    self = .cHash
                } else if matches("org_id") {
                    self = .orgID
                } else {
                    return nil
                }
            case 7:
                guard matches("at_hash") else { return nil }
                self = .atHash
            case 9:
                guard matches("auth_time") else { return nil }
                self = .authTime
            case 12:
                guard matches("transfer_sub") else { return nil }
                self = .transferSub
            case 14:
                guard matches("email_verified") else { return nil }
                self = .emailVerified
            case 15:
                guard matches("nonce_supported") else { return nil }
                self = .nonceSupported
            case 16:
                if matches("is_private_email") {
                    self = .isPrivateEmail
                } else if matches("real_user_status") {
                    self = .realUserStatus
                } else {
                    return nil
                }
            default: return nil
            }
        }

        var name: String {
            switch self {
            case .iss: "iss"
            case .aud: "aud"
            case .sub: "sub"
            case .iat: "iat"
            case .exp: "exp"
            case .nbf: "nbf"
            case .nonce: "nonce"
            case .email: "email"
            case .emailVerified: "email_verified"
            case .isPrivateEmail: "is_private_email"
            case .nonceSupported: "nonce_supported"
            case .realUserStatus: "real_user_status"
            case .transferSub: "transfer_sub"
            case .authTime: "auth_time"
            case .orgID: "org_id"
            case .cHash: "c_hash"
            case .atHash: "at_hash"
            }
        }
    }

    private mutating func note(_ problem: String) {
        if self.problem == nil { self.problem = problem }
    }

    private mutating func read(
        _ rawName: UnsafeBufferPointer<UInt8>,
        _ reader: inout JSONValueReader,
        seen: inout UInt32
    ) throws(JSONValueError) {
        guard let claim = Claim(rawName) else {
            try reader.skipValue()
            return
        }
        let name = claim.name
        let bit: UInt32 = 1 << claim.rawValue
        if seen & bit != 0 { note("claim \(name) appears more than once") }
        seen |= bit
        switch claim {
        case .iss: issuer = try requiredString(name, &reader)
        case .sub: subject = try requiredString(name, &reader)
        case .nonce: nonce = try requiredString(name, &reader)
        case .email: email = try requiredString(name, &reader)
        case .transferSub: transferSub = try requiredString(name, &reader)
        case .iat: issuedAt = try requiredTime(name, &reader)
        case .exp: expiresAt = try requiredTime(name, &reader)
        case .nbf: notBefore = try requiredTime(name, &reader)
        case .aud: audiences = try audience(&reader)
        case .emailVerified: emailVerified = try Self.flexibleBool(&reader)
        case .isPrivateEmail: isPrivateEmail = try Self.flexibleBool(&reader)
        case .nonceSupported: nonceSupported = try Self.flexibleBool(&reader)
        case .authTime: authTime = try Self.optionalTime(&reader)
        case .realUserStatus:
            if case .integer(let value) = try reader.readValue(), let status = Int(exactly: value) {
                realUserStatus = status
            }
        case .orgID: organizationID = try Self.optionalString(&reader)
        case .cHash: codeHash = try Self.optionalString(&reader)
        case .atHash: accessTokenHash = try Self.optionalString(&reader)
        }
    }

    private mutating func requiredString(
        _ name: String,
        _ reader: inout JSONValueReader
    ) throws(JSONValueError)
        -> String?
    {
        guard try reader.peekKind() == .string else {
            note("claim \(name) must be a string")
            try reader.skipValue()
            return nil
        }
        return try reader.readString()
    }

    /// A NumericDate (RFC 7519 §2): integer seconds; a fractional value is rounded down.
    private mutating func requiredTime(
        _ name: String,
        _ reader: inout JSONValueReader
    ) throws(JSONValueError)
        -> Int64?
    {
        guard let time = try Self.optionalTime(&reader) else {
            note("claim \(name) must be a number of seconds")
            return nil
        }
        return time
    }

    private static func optionalTime(_ reader: inout JSONValueReader) throws(JSONValueError) -> Int64? {
        guard try reader.peekKind() == .number else {
            try reader.skipValue()
            return nil
        }
        switch try reader.readNumber() {
        case .integer(let value): return value
        case .double(let value):
            let floored = value.rounded(.down)
            return floored >= -9.2e18 && floored <= 9.2e18 ? Int64(floored) : nil
        default: return nil
        }
    }

    private static func optionalString(_ reader: inout JSONValueReader) throws(JSONValueError) -> String? {
        guard try reader.peekKind() == .string else {
            try reader.skipValue()
            return nil
        }
        return try reader.readString()
    }

    /// `true` / `"true"` → true, `false` / `"false"` → false, anything else → false ("not verified").
    private static func flexibleBool(_ reader: inout JSONValueReader) throws(JSONValueError) -> Bool {
        switch try reader.peekKind() {
        case .bool: return try reader.readBool()
        case .string: return try reader.readString() == "true"
        default:
            try reader.skipValue()
            return false
        }
    }

    private mutating func audience(_ reader: inout JSONValueReader) throws(JSONValueError) -> [String]? {
        switch try reader.peekKind() {
        case .string: return [try reader.readString()]
        case .array:
            var values: [String] = []
            var allStrings = true
            try reader.readArray { reader throws(JSONValueError) in
                if try reader.peekKind() == .string {
                    values.append(try reader.readString())
                } else {
                    allStrings = false
                    try reader.skipValue()
                }
            }
            guard allStrings else {
                note("claim aud must be a string or an array of strings")
                return nil
            }
            return values
        default:
            note("claim aud must be a string or an array of strings")
            try reader.skipValue()
            return nil
        }
    }
}

extension IdentityTokenVerifier: IdentityTokenVerifying {
    public func verifyIdentityToken(
        _ token: String,
        nonce: NonceExpectation?,
        now: Int64
    ) async throws(IdentityTokenError) -> AppleIdentityClaims {
        try verify(token, nonce: nonce, now: now)
    }
}
