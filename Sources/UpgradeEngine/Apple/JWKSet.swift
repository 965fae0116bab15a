/// A JSON Web Key Set of RSA signature keys, looked up by `kid` (Apple's `GET /auth/keys`).
///
/// Only keys that can verify RS256 become usable: `kty` must be `RSA`; `use`, when present, must
/// be `sig`; `alg`, when present, must be `RS256`; `key_ops`, when present, must include `verify`;
/// the key must pass `RSAPublicKey`'s checks. Other entries are skipped (listed in `skipped`), so
/// a set that also publishes, say, an encryption key still loads. A `kid` used twice and private
/// key members are errors. There is no default key: a `kid` that is not in the set resolves to
/// nothing, and the caller must reject (or refetch the set once, then reject).
public struct JWKSet: Sendable {
    /// An entry that was not loaded, and why.
    public struct SkippedKey: Sendable, Equatable {
        public let keyID: String?
        public let reason: String
    }

    /// Apple's set is well under 10 KiB; a megabyte is a bound against hostile or broken endpoints.
    public static let maximumJSONBytes = 1 << 20

    private let keysByID: [String: RSAPublicKey]
    /// The usable keys' ids, in the order of the document.
    public let keyIDs: [String]
    public let skipped: [SkippedKey]

    /// Members only a private JWK has (RFC 7518 §6.3.2).
    private static let privateMembers: Set<String> = ["d", "p", "q", "dp", "dq", "qi", "oth"]

    public init(keys: [(keyID: String, key: RSAPublicKey)]) throws(JWKSetError) {
        self.keysByID = try Self.index(keys)
        self.keyIDs = keys.map(\.keyID)
        self.skipped = []
    }

    private static func index(
        _ keys: [(keyID: String, key: RSAPublicKey)]
    ) throws(JWKSetError) -> [String: RSAPublicKey] {
        guard !keys.isEmpty else { throw JWKSetError(.noUsableKeys, "the key set is empty") }
        var byID: [String: RSAPublicKey] = [:]
        for (keyID, key) in keys {
            guard !keyID.isEmpty else { throw JWKSetError(.malformed, "a key has an empty kid") }
            guard byID.updateValue(key, forKey: keyID) == nil else {
                throw JWKSetError(.duplicateKeyID, "kid \(IdentityTokenError.quoted(keyID)) is used by two keys")
            }
        }
        return byID
    }

    public init<Bytes: Collection<UInt8>>(json bytes: Bytes) throws(JWKSetError) {
        guard bytes.count <= Self.maximumJSONBytes else {
            throw JWKSetError(.malformed, "the JWK set is larger than \(Self.maximumJSONBytes) bytes")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes)
        } catch {
            throw JWKSetError(.malformed, "the JWK set is not valid JSON: \(error)")
        }
        guard case .object = document, let keys = document["keys"]?.arrayValue else {
            throw JWKSetError(.malformed, "the JWK set is not an object with a \"keys\" array")
        }
        var usable: [(keyID: String, key: RSAPublicKey)] = []
        var skipped: [SkippedKey] = []
        var seenIDs: Set<String> = []
        for (position, entry) in keys.enumerated() {
            guard let members = entry.members else {
                throw JWKSetError(.malformed, "keys[\(position)] is not an object")
            }
            let keyID = entry["kid"]?.stringValue
            if let keyID, !seenIDs.insert(keyID).inserted {
                throw JWKSetError(.duplicateKeyID, "kid \(IdentityTokenError.quoted(keyID)) is used by two keys")
            }
            if members.contains(where: { Self.privateMembers.contains($0.key) }) {
                throw JWKSetError(
                    .privateKeyMaterial,
                    "keys[\(position)] contains private key members; publish and configure public keys only"
                )
            }
            switch Self.usableKey(entry) {
            case .success(let key):
                if let keyID, !keyID.isEmpty {
                    usable.append((keyID, key))
                } else {
                    skipped.append(SkippedKey(keyID: nil, reason: "keys[\(position)] has no kid"))
                }
            case .failure(let reason):
                skipped.append(SkippedKey(keyID: keyID, reason: "keys[\(position)]: \(reason.message)"))
            }
        }
        guard !usable.isEmpty else {
            let reasons = skipped.map(\.reason).joined(separator: "; ")
            throw JWKSetError(
                .noUsableKeys,
                "the JWK set has no RS256 signature key" + (reasons.isEmpty ? "" : " (\(reasons))")
            )
        }
        self.keysByID = try Self.index(usable)
        self.keyIDs = usable.map(\.keyID)
        self.skipped = skipped
    }

    private struct Unusable: Error {
        let message: String
    }

    private static func usableKey(_ entry: JSONValue) -> Result<RSAPublicKey, Unusable> {
        guard let type = entry["kty"]?.stringValue else { return .failure(Unusable(message: "no kty")) }
        guard type == "RSA" else {
            return .failure(Unusable(message: "kty \(IdentityTokenError.quoted(type)) is not RSA"))
        }
        if let use = entry["use"], use.stringValue != "sig" {
            return .failure(Unusable(message: "use is not \"sig\""))
        }
        if let algorithm = entry["alg"], algorithm.stringValue != "RS256" {
            let name = algorithm.stringValue.map(IdentityTokenError.quoted) ?? "(not a string)"
            return .failure(Unusable(message: "alg \(name) is not RS256"))
        }
        if let operations = entry["key_ops"],
            !(operations.arrayValue ?? []).contains(where: { $0.stringValue == "verify" })
        {
            return .failure(Unusable(message: "key_ops does not include \"verify\""))
        }
        guard let n = entry["n"]?.stringValue, let e = entry["e"]?.stringValue else {
            return .failure(Unusable(message: "n or e is missing"))
        }
        do {
            return .success(try RSAPublicKey(jwkModulus: n, exponent: e))
        } catch {
            return .failure(Unusable(message: error.message))
        }
    }

    /// The key with this `kid`, or nil. Never a fallback to another key.
    public subscript(keyID: String) -> RSAPublicKey? {
        keysByID[keyID]
    }

    /// The usable keys as a JWK set document, each `{"kty":"RSA","kid":…,"use":"sig","alg":"RS256","n":…,"e":…}`
    /// (the shape of Apple's `/auth/keys` response).
    public var json: JSONValue {
        .object([
            "keys": .array(
                keyIDs.map { keyID in
                    let key = keysByID[keyID]!
                    return .object([
                        "kty": .string("RSA"), "kid": .string(keyID), "use": .string("sig"), "alg": .string("RS256"),
                        "n": .string(key.jwkModulus), "e": .string(key.jwkExponent),
                    ])
                }
            )
        ])
    }
}
