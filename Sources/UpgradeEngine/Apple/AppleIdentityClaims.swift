/// The claims of a verified Sign in with Apple identity token (docs/apple-protocol.md §1.2).
///
/// Only produced by `IdentityTokenVerifier` after the signature, issuer, audience, times, subject
/// and nonce have been checked. The nonce is kept only in `checkedNonce`, for recording its single
/// use; it is left out of `json` and should not travel further (logs, output).
public struct AppleIdentityClaims: Sendable, Equatable {
    /// `iss`, equal to the policy's issuer.
    public var issuer: String
    /// `aud`: the client id (bundle id or Services id) the token was issued to; use it as the
    /// `client_id` of the code exchange.
    public var audience: String
    /// `sub`: the team-scoped, stable Apple user id. Opaque.
    public var subject: String
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// `auth_time`, when present (undocumented by Apple; informational).
    public var authTime: Int64?
    /// `email`: real or private-relay address; may be absent on later sign-ins. Never an identifier.
    public var email: String?
    /// `email_verified`: true only for JSON `true` or the string `"true"` (Apple has sent both);
    /// absent or anything else is not verified (docs/apple-protocol.md §1.3).
    public var emailVerified: Bool
    /// `is_private_email`, read like `email_verified`; nil when absent (Apple omits it for real addresses).
    public var isPrivateEmail: Bool?
    /// `nonce_supported`, read like `email_verified`; nil when absent.
    public var nonceSupported: Bool?
    /// `real_user_status`: 0 unsupported, 1 unknown, 2 likely real; first sign-in on recent OS only.
    public var realUserStatus: Int?
    /// `transfer_sub`: present during the 60 days after an app transfer; links the new `sub` to
    /// the sender team's user (docs/apple-protocol.md §3.5).
    public var transferSub: String?
    /// `org_id`, managed Apple Accounts only.
    public var organizationID: String?
    /// `c_hash` / `at_hash`, surfaced as delivered (Apple documents no verification rule).
    public var codeHash: String?
    public var accessTokenHash: String?
    /// The `nonce` claim, set only when the verifier checked it against an expectation.
    public var checkedNonce: String?

    public init(
        issuer: String,
        audience: String,
        subject: String,
        issuedAt: Int64,
        expiresAt: Int64,
        authTime: Int64? = nil,
        email: String? = nil,
        emailVerified: Bool = false,
        isPrivateEmail: Bool? = nil,
        nonceSupported: Bool? = nil,
        realUserStatus: Int? = nil,
        transferSub: String? = nil,
        organizationID: String? = nil,
        codeHash: String? = nil,
        accessTokenHash: String? = nil,
        checkedNonce: String? = nil
    ) {
        self.issuer = issuer
        self.audience = audience
        self.subject = subject
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.authTime = authTime
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.nonceSupported = nonceSupported
        self.realUserStatus = realUserStatus
        self.transferSub = transferSub
        self.organizationID = organizationID
        self.codeHash = codeHash
        self.accessTokenHash = accessTokenHash
        self.checkedNonce = checkedNonce
    }

    /// The claims under Apple's names (absent ones left out), booleans as JSON booleans.
    public var json: JSONValue {
        .object([
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(subject),
            "iat": .integer(issuedAt), "exp": .integer(expiresAt), "auth_time": authTime.map(JSONValue.integer),
            "email": email.map(JSONValue.string), "email_verified": .bool(emailVerified),
            "is_private_email": isPrivateEmail.map(JSONValue.bool),
            "nonce_supported": nonceSupported.map(JSONValue.bool),
            "real_user_status": realUserStatus.map { .integer(Int64($0)) },
            "transfer_sub": transferSub.map(JSONValue.string), "org_id": organizationID.map(JSONValue.string),
            "c_hash": codeHash.map(JSONValue.string), "at_hash": accessTokenHash.map(JSONValue.string),
        ])
    }
}
