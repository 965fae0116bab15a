import COpenSSL

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256). The Apple ID emulator
/// signs identity tokens and notifications with it.
///
/// Invariant behind `@unchecked Sendable`: the `EVP_PKEY` is created in `init`, never mutated, and
/// freed in `deinit`; every signature uses its own `EVP_MD_CTX`.
public final class RSAPrivateKey: @unchecked Sendable {
    private let key: OpaquePointer
    public let publicKey: RSAPublicKey

    /// Takes ownership of `key` (freed here on failure).
    private init(takingOwnershipOf key: OpaquePointer) throws(RSAKeyError) {
        let publicKey: RSAPublicKey
        do {
            publicKey = try RSAPublicKey(derSPKI: EVPKeySupport.publicKeyDER(key))
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
    public convenience init(generatingBits bits: Int = 2048) throws(RSAKeyError) {
        guard bits >= RSAPublicKey.minimumBits, bits <= RSAPublicKey.maximumBits else {
            throw RSAKeyError(.tooSmall, "RSA keys are generated with 2048 to 8192 bits, not \(bits)")
        }
        guard let key = copenssl_rsa_generate(UInt32(bits)) else {
            throw RSAKeyError(.malformed, "RSA key generation: \(OpenSSLError.drain("EVP_PKEY_Q_keygen"))")
        }
        try self.init(takingOwnershipOf: key)
    }

    /// From an unencrypted PKCS#8 `-----BEGIN PRIVATE KEY-----` document (a PKCS#1
    /// `RSA PRIVATE KEY` is read too).
    public convenience init(pem: String) throws(RSAKeyError) {
        guard let key = EVPKeySupport.readPrivateKey(pem: pem) else {
            OpenSSLError.drainQueue()
            throw RSAKeyError(.malformed, "not an unencrypted PEM private key")
        }
        guard EVP_PKEY_is_a(key, copenssl_name_rsa()) == 1 else {
            EVP_PKEY_free(key)
            throw RSAKeyError(.notRSA, "the private key is not an RSA key")
        }
        try self.init(takingOwnershipOf: key)
    }

    /// PKCS#8, unencrypted: keep it out of logs and version control.
    public var pemRepresentation: String { EVPKeySupport.privateKeyPEM(key) }

    /// RSASSA-PKCS1-v1_5 SHA-256 signature of `message`, `publicKey.modulusByteCount` bytes long.
    public func signRS256(_ message: some Collection<UInt8>) -> [UInt8] {
        EVPKeySupport.withBytes(message) { EVPKeySupport.signSHA256(key, message: $0) }
    }
}
