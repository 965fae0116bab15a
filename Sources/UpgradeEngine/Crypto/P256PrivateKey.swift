import COpenSSL

/// A P-256 private key that signs ES256 in the JOSE format (raw `R‖S`). This is the key behind
/// the `client_secret` JWT (an Apple `.p8` file) and the emulator's registered client keys.
///
/// Invariant behind `@unchecked Sendable`: the `EVP_PKEY` is created in `init`, never mutated, and
/// freed in `deinit`; every signature uses its own `EVP_MD_CTX`.
public final class P256PrivateKey: @unchecked Sendable {
    private let key: OpaquePointer
    public let publicKey: P256PublicKey

    /// Takes ownership of `key` (freed here on failure).
    private init(takingOwnershipOf key: OpaquePointer) throws(P256KeyError) {
        guard P256PublicKey.isP256(key) else {
            EVP_PKEY_free(key)
            throw P256KeyError(.wrongCurve, "the private key is not an EC key on P-256")
        }
        let publicKey: P256PublicKey
        do {
            publicKey = try P256PublicKey(derSPKI: EVPKeySupport.publicKeyDER(key))
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.key = key
        self.publicKey = publicKey
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// A fresh key from OpenSSL's DRBG.
    public convenience init() {
        guard let key = copenssl_ec_generate(copenssl_curve_p256()) else {
            preconditionFailure("P-256 key generation failed: \(OpenSSLError.drainQueue())")
        }
        do {
            try self.init(takingOwnershipOf: key)
        } catch {
            preconditionFailure("a generated P-256 key was refused: \(error)")
        }
    }

    /// From an unencrypted PKCS#8 `-----BEGIN PRIVATE KEY-----` document, the format of the `.p8`
    /// files Apple issues (a SEC1 `EC PRIVATE KEY` is read too).
    public convenience init(pem: String) throws(P256KeyError) {
        guard let key = EVPKeySupport.readPrivateKey(pem: pem) else {
            OpenSSLError.drainQueue()
            throw P256KeyError(.malformed, "not an unencrypted PEM private key")
        }
        try self.init(takingOwnershipOf: key)
    }

    /// PKCS#8, unencrypted: keep it out of logs and version control.
    public var pemRepresentation: String { EVPKeySupport.privateKeyPEM(key) }

    /// ECDSA P-256 / SHA-256 signature of `message` as 64 raw bytes `R‖S`.
    public func signJOSE(_ message: some Collection<UInt8>) -> [UInt8] {
        let der = EVPKeySupport.withBytes(message) { EVPKeySupport.signSHA256(key, message: $0) }
        guard let raw = P256PublicKey.rawSignature(fromDER: der) else {
            preconditionFailure("libcrypto produced an ECDSA signature that does not parse")
        }
        return raw
    }
}
