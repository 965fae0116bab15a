import COpenSSL

/// An RSA public key that verifies RSASSA-PKCS1-v1_5 SHA-256 (RS256) signatures.
///
/// Invariant behind `@unchecked Sendable`: the `EVP_PKEY` and the prepared verification context
/// are created in `init`, never mutated afterwards, and freed in `deinit`. Each verification works
/// on its own duplicate of the prepared context (`EVP_PKEY_CTX_dup` only reads its source), so
/// any number of threads may verify with one key at once.
///
/// Accepted keys: modulus of 2048 to 8192 bits (Apple's keys are 2048; bigger moduli only cost
/// verification time), odd; public exponent odd, at least 3 and at most 32 bits (a huge exponent
/// makes every verification as slow as a signature — a cheap denial of service).
public final class RSAPublicKey: @unchecked Sendable {
    public static let minimumBits = 2048
    public static let maximumBits = 8192
    static let maximumExponentBits: Int32 = 32

    let key: OpaquePointer
    /// An `EVP_PKEY_CTX` already set up for PKCS#1 v1.5 / SHA-256 verification. Setting a context up
    /// looks the algorithm up in the provider store under a lock; duplicating a prepared one does
    /// not, which is what keeps token verification close to the raw RSA verification rate.
    private let verifyPrototype: OpaquePointer
    public let bitCount: Int
    /// `k` in RFC 8017: every signature is exactly this long.
    public let modulusByteCount: Int

    /// Takes ownership of `key` (freed here on failure).
    init(takingOwnershipOf key: OpaquePointer) throws(RSAKeyError) {
        do {
            try Self.check(key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            EVP_PKEY_free(key)
            throw RSAKeyError(.malformed, "the RSA key cannot be used: \(OpenSSLError.drain("EVP_PKEY_CTX_new"))")
        }
        guard EVP_PKEY_verify_init(context) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1,
            EVP_PKEY_CTX_set_signature_md(context, EVPKeySupport.sha256.md) == 1
        else {
            EVP_PKEY_CTX_free(context)
            EVP_PKEY_free(key)
            throw RSAKeyError(.malformed, "the RSA key cannot be used: \(OpenSSLError.drain("EVP_PKEY_verify_init"))")
        }
        self.key = key
        self.verifyPrototype = context
        self.bitCount = Int(EVP_PKEY_get_bits(key))
        self.modulusByteCount = Int(EVP_PKEY_get_size(key))
    }

    deinit {
        EVP_PKEY_CTX_free(verifyPrototype)
        EVP_PKEY_free(key)
    }

    /// From the big-endian unsigned modulus and exponent (leading zero bytes allowed).
    public convenience init(modulus: [UInt8], exponent: [UInt8]) throws(RSAKeyError) {
        try self.init(takingOwnershipOf: Self.makeKey(modulus: modulus, exponent: exponent))
    }

    /// From a JWK's `n` and `e` members (base64url, no padding — RFC 7518 §6.3.1).
    public convenience init(jwkModulus n: String, exponent e: String) throws(RSAKeyError) {
        guard let modulus = Base64URL.decode(n), !modulus.isEmpty else {
            throw RSAKeyError(.malformed, "the JWK's n is not base64url")
        }
        guard let exponent = Base64URL.decode(e), !exponent.isEmpty else {
            throw RSAKeyError(.malformed, "the JWK's e is not base64url")
        }
        try self.init(modulus: modulus, exponent: exponent)
    }

    /// From a `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo) PEM document.
    public convenience init(pem: String) throws(RSAKeyError) {
        guard let key = EVPKeySupport.readPublicKey(pem: pem) else {
            OpenSSLError.drainQueue()
            throw RSAKeyError(.malformed, "not a PEM SubjectPublicKeyInfo (-----BEGIN PUBLIC KEY-----)")
        }
        try self.init(takingOwnershipOf: key)
    }

    /// From a DER SubjectPublicKeyInfo.
    public convenience init(derSPKI der: [UInt8]) throws(RSAKeyError) {
        guard let key = EVPKeySupport.readPublicKey(der: der) else {
            OpenSSLError.drainQueue()
            throw RSAKeyError(.malformed, "not a DER SubjectPublicKeyInfo")
        }
        try self.init(takingOwnershipOf: key)
    }

    private static func makeKey(modulus: [UInt8], exponent: [UInt8]) throws(RSAKeyError) -> OpaquePointer {
        // Bound the input before handing it to the bignum library: 8192 bits plus leading zeros.
        guard modulus.count <= maximumBits / 8 + 8, exponent.count <= 16 else {
            throw RSAKeyError(.tooLarge, "RSA modulus or exponent is far too long")
        }
        guard let n = modulus.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw RSAKeyError(.malformed, "RSA modulus: \(OpenSSLError.drain("BN_bin2bn"))")
        }
        defer { BN_free(n) }
        guard let e = exponent.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw RSAKeyError(.malformed, "RSA exponent: \(OpenSSLError.drain("BN_bin2bn"))")
        }
        defer { BN_free(e) }
        // Check the shape here too, so a bad key is refused before any provider code sees it.
        try checkShape(modulusBits: Int(BN_num_bits(n)), modulusIsOdd: BN_is_odd(n) == 1, exponent: e)

        guard let builder = OSSL_PARAM_BLD_new() else { throw RSAKeyError(.malformed, "OSSL_PARAM_BLD_new failed") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // Key names come from C literals: the builder keeps the pointer until OSSL_PARAM_BLD_to_param.
        guard OSSL_PARAM_BLD_push_BN(builder, copenssl_param_rsa_n(), n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, copenssl_param_rsa_e(), e) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else {
            throw RSAKeyError(.malformed, "RSA parameters: \(OpenSSLError.drain("OSSL_PARAM_BLD"))")
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, copenssl_name_rsa(), nil) else {
            throw RSAKeyError(.malformed, "RSA key: \(OpenSSLError.drain("EVP_PKEY_CTX_new_from_name"))")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &key, copenssl_evp_pkey_public_key, params) == 1,
            let key
        else {
            throw RSAKeyError(.malformed, "RSA key: \(OpenSSLError.drain("EVP_PKEY_fromdata"))")
        }
        return key
    }

    private static func check(_ key: OpaquePointer) throws(RSAKeyError) {
        guard EVP_PKEY_is_a(key, copenssl_name_rsa()) == 1 else {
            throw RSAKeyError(.notRSA, "the key is not an RSA key")
        }
        var n: OpaquePointer?
        var e: OpaquePointer?
        defer {
            BN_free(n)
            BN_free(e)
        }
        guard EVP_PKEY_get_bn_param(key, copenssl_param_rsa_n(), &n) == 1,
            EVP_PKEY_get_bn_param(key, copenssl_param_rsa_e(), &e) == 1,
            let n, let e
        else {
            throw RSAKeyError(.malformed, "RSA key parameters: \(OpenSSLError.drain("EVP_PKEY_get_bn_param"))")
        }
        try checkShape(modulusBits: Int(BN_num_bits(n)), modulusIsOdd: BN_is_odd(n) == 1, exponent: e)
    }

    private static func checkShape(
        modulusBits: Int,
        modulusIsOdd: Bool,
        exponent e: OpaquePointer
    ) throws(RSAKeyError) {
        guard modulusBits >= minimumBits else {
            throw RSAKeyError(.tooSmall, "RSA key has \(modulusBits) bits; at least \(minimumBits) are required")
        }
        guard modulusBits <= maximumBits else {
            throw RSAKeyError(.tooLarge, "RSA key has \(modulusBits) bits; at most \(maximumBits) are accepted")
        }
        guard modulusIsOdd else { throw RSAKeyError(.badModulus, "RSA modulus is even") }
        let exponentBits = BN_num_bits(e)
        guard BN_is_odd(e) == 1, exponentBits >= 2, exponentBits <= maximumExponentBits else {
            throw RSAKeyError(
                .badExponent,
                "RSA public exponent must be odd, at least 3 and at most \(maximumExponentBits) bits"
            )
        }
    }

    // MARK: Verification

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message`. Any failure (wrong length, bad padding,
    /// wrong digest) is simply `false`; libcrypto's error queue is left empty either way.
    public func verify(signature: some Collection<UInt8>, message: some Collection<UInt8>) -> Bool {
        EVPKeySupport.withBytes(signature) { signature in
            EVPKeySupport.withBytes(message) { message in verify(signature: signature, message: message) }
        }
    }

    func verify(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == modulusByteCount, let signatureBase = signature.baseAddress else { return false }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digest -> Bool in
            var digestLength: UInt32 = 0
            guard
                EVP_Digest(
                    message.baseAddress,
                    message.count,
                    digest.baseAddress,
                    &digestLength,
                    EVPKeySupport.sha256.md,
                    nil
                ) == 1, digestLength == 32
            else {
                OpenSSLError.drainQueue()
                return false
            }
            guard let context = EVP_PKEY_CTX_dup(verifyPrototype) else {
                OpenSSLError.drainQueue()
                return false
            }
            defer { EVP_PKEY_CTX_free(context) }
            let rc = EVP_PKEY_verify(
                context,
                signatureBase.assumingMemoryBound(to: UInt8.self),
                signature.count,
                digest.baseAddress,
                32
            )
            guard rc == 1 else {
                // A bad signature leaves an entry on the thread's error queue; it must not surface
                // in the next, unrelated OpenSSL call on this thread.
                OpenSSLError.drainQueue()
                return false
            }
            return true
        }
    }

    // MARK: Export

    /// The JWK `n` member: base64url of the unsigned big-endian modulus.
    public var jwkModulus: String {
        Base64URL.encode(EVPKeySupport.bigNumberParameter(key, copenssl_param_rsa_n()) ?? [])
    }

    /// The JWK `e` member.
    public var jwkExponent: String {
        Base64URL.encode(EVPKeySupport.bigNumberParameter(key, copenssl_param_rsa_e()) ?? [])
    }
}
