/// Server-issued nonces for Sign in with Apple outside an upgrade (`POST /v1/apple/sign-in`), so a
/// captured or leaked identity token cannot be replayed to sign in (docs/apple-protocol.md §1.4, §6).
///
/// Issuing writes nothing: a nonce is
/// `base64url(0x01 ‖ expiresAt (8 bytes, big-endian) ‖ 16 random bytes ‖ HMAC-SHA256 tag)`, the tag
/// under a key derived from `UPGRADE_SECRET_KEY_FILE` for this purpose only. Checking one proves we
/// issued it and that it has not expired; the store then records it as used until it expires, so
/// it signs in once. A flood of nonce requests therefore costs the server an HMAC each and no
/// storage, and only a token Apple signed with one of our nonces reaches the database.
public struct SignInNonces: Sendable {
    /// Ten minutes from issue to the sign-in that carries it.
    public static let defaultLifetime: Int64 = 600
    static let version: UInt8 = 1
    static let randomLength = 16
    static let signedLength = 1 + 8 + randomLength
    static let encodedLength = (signedLength + 32) * 4 / 3 + ((signedLength + 32) % 3 == 0 ? 0 : 1)

    let authenticator: MessageAuthenticator
    public let lifetime: Int64

    public init(secrets: SecretBox, lifetime: Int64 = SignInNonces.defaultLifetime) {
        self.authenticator = secrets.authenticator(purpose: "sign-in nonce")
        self.lifetime = max(1, lifetime)
    }

    /// A fresh nonce for the client to pass to Apple as the request's `nonce`, unchanged.
    public func issue(now: Int64) -> (nonce: String, expiresAt: Int64) {
        let expiresAt = now.adding(seconds: lifetime)
        var signed: [UInt8] = [Self.version]
        signed.reserveCapacity(Self.signedLength + 32)
        for shift in stride(from: 56, through: 0, by: -8) {
            signed.append(UInt8(truncatingIfNeeded: expiresAt >> shift))
        }
        signed += SecureRandom.bytes(Self.randomLength)
        let tag = authenticator.tag(signed)
        return (Base64URL.encode(signed + tag), expiresAt)
    }

    public enum Verdict: Sendable, Hashable {
        /// Ours and unexpired; single use is the store's to enforce, until `expiresAt`.
        case valid(expiresAt: Int64)
        /// Not a nonce this server issued (or issued under another key).
        case unknown
        case expired
    }

    /// Whether `nonce` is one this server issued and it is still within its lifetime.
    public func check(_ nonce: String, now: Int64) -> Verdict {
        guard nonce.utf8.count == Self.encodedLength, let bytes = Base64URL.decode(nonce),
            bytes.count == Self.signedLength + 32, bytes[0] == Self.version
        else { return .unknown }
        let signed = bytes[0..<Self.signedLength]
        guard authenticator.isValid(tag: bytes[Self.signedLength...], for: signed) else { return .unknown }
        let expiresAt = bytes[1..<9].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return now < expiresAt ? .valid(expiresAt: expiresAt) : .expired
    }

    /// Until when a nonce accepted at `now` must be remembered as used: it was issued no earlier
    /// than `now - lifetime`, so it expires no later than `now + lifetime`, and after that it is
    /// refused as expired anyway. Spares the caller checking the nonce's tag a second time.
    public func usedRecordExpiry(acceptedAt now: Int64) -> Int64 { now.adding(seconds: lifetime) }

    /// What the store records a used nonce under: its SHA-256, lowercase hex.
    public static func usedKey(_ nonce: String) -> String { Digest.sha256(nonce).hexString }
}
