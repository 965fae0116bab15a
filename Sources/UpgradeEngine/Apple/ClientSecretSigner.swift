/// Makes the `client_secret` JWT that authenticates us to Apple's REST endpoints (docs/apple-protocol.md §2.1):
/// header `{"alg":"ES256","kid":keyID}`, claims `iss` = team id, `iat` = now, `exp` = now +
/// lifetime, `aud` = `https://appleid.apple.com`, `sub` = client id, signed with the team's P-256
/// key as raw `R‖S` (a DER signature is one of Apple's `invalid_client` causes).
public struct ClientSecretSigner: Sendable {
    public static let audience = "https://appleid.apple.com"
    /// Apple's upper bound on `exp - iat`: 15 777 000 s, about six months.
    public static let maximumLifetime: Int64 = 15_777_000
    /// A secret is cheap to make, so by default it lives one hour: a leaked one is useful briefly.
    public static let defaultLifetime: Int64 = 3600

    public let teamID: String
    public let keyID: String
    public let clientID: String
    public let privateKey: P256PrivateKey

    public init(teamID: String, keyID: String, clientID: String, privateKey: P256PrivateKey) throws(ClientSecretError) {
        guard Self.isAppleIdentifier(teamID) else {
            throw ClientSecretError(
                .invalidTeamID,
                "the team id must be 10 characters A-Z or 0-9, as Apple issues them"
            )
        }
        guard Self.isAppleIdentifier(keyID) else {
            throw ClientSecretError(.invalidKeyID, "the key id must be 10 characters A-Z or 0-9, as Apple issues them")
        }
        guard Self.isClientID(clientID) else {
            throw ClientSecretError(
                .invalidClientID,
                "the client id must be a bundle id or Services id: 1 to 255 printable ASCII characters, no spaces"
            )
        }
        self.teamID = teamID
        self.keyID = keyID
        self.clientID = clientID
        self.privateKey = privateKey
    }

    /// Team ids and key ids: exactly 10 characters, upper-case letters and digits.
    public static func isAppleIdentifier(_ value: String) -> Bool {
        value.utf8.count == 10
            && value.utf8.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            }
    }

    /// Bundle ids and Services ids are reverse-DNS strings; we only insist on something that can
    /// travel in a form field and a JWT unchanged.
    public static func isClientID(_ value: String) -> Bool {
        (1...255).contains(value.utf8.count) && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    public func make(
        now: Int64,
        lifetime: Int64 = ClientSecretSigner.defaultLifetime
    ) throws(ClientSecretError)
        -> String
    {
        guard (1...Self.maximumLifetime).contains(lifetime) else {
            throw ClientSecretError(
                .invalidLifetime,
                "a client secret lives 1 to \(Self.maximumLifetime) seconds, not \(lifetime)"
            )
        }
        let (expiresAt, overflow) = now.addingReportingOverflow(lifetime)
        guard !overflow else { throw ClientSecretError(.invalidLifetime, "now + lifetime overflows") }
        let header = JWSHeader(algorithm: "ES256", keyID: keyID)
        let claims = JSONValue.object([
            "iss": .string(teamID), "iat": .integer(now), "exp": .integer(expiresAt),
            "aud": .string(Self.audience), "sub": .string(clientID),
        ])
        return JWSCompact.sign(header: header.json, payload: claims.serialized()) { privateKey.signJOSE($0) }
    }
}
