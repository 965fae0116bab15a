import COpenSSL

/// A P-256 (secp256r1) public key that verifies ES256 signatures in the JOSE format: raw `R‖S`,
/// 32 bytes each (RFC 7518 §3.4), not ASN.1 DER.
///
/// Invariant behind `@unchecked Sendable`: the `EVP_PKEY` is created in `init`, never mutated, and
/// freed in `deinit`; every verification uses its own `EVP_MD_CTX`.
public final class P256PublicKey: @unchecked Sendable {
    let key: OpaquePointer

    /// Takes ownership of `key` (freed here on failure).
    init(takingOwnershipOf key: OpaquePointer) throws(P256KeyError) {
        guard P256PublicKey.isP256(key) else {
            EVP_PKEY_free(key)
            throw P256KeyError(.wrongCurve, "the key is not an EC key on P-256")
        }
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// From a `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo) PEM document.
    public convenience init(pem: String) throws(P256KeyError) {
        guard let key = EVPKeySupport.readPublicKey(pem: pem) else {
            OpenSSLError.drainQueue()
            throw P256KeyError(.malformed, "not a PEM SubjectPublicKeyInfo (-----BEGIN PUBLIC KEY-----)")
        }
        try self.init(takingOwnershipOf: key)
    }

    /// From a DER SubjectPublicKeyInfo.
    public convenience init(derSPKI der: [UInt8]) throws(P256KeyError) {
        guard let key = EVPKeySupport.readPublicKey(der: der) else {
            OpenSSLError.drainQueue()
            throw P256KeyError(.malformed, "not a DER SubjectPublicKeyInfo")
        }
        try self.init(takingOwnershipOf: key)
    }

    /// Whether `key` is an EC key on the P-256 curve (public or private).
    static func isP256(_ key: OpaquePointer) -> Bool {
        guard EVP_PKEY_is_a(key, copenssl_name_ec()) == 1 else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, copenssl_param_group_name(), &name, name.count, &length) == 1
        else {
            OpenSSLError.drainQueue()
            return false
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256" || group == "secp256r1"
    }

    /// ECDSA P-256 / SHA-256 over `message` with a 64-byte `R‖S` signature. Any other length, a DER
    /// signature, or `R` / `S` out of range is simply `false`.
    public func verifyJOSE(signature: some Collection<UInt8>, message: some Collection<UInt8>) -> Bool {
        let raw = Array(signature)
        guard raw.count == 64, let der = Self.derSignature(fromRaw: raw) else { return false }
        return EVPKeySupport.withBytes(message) { message in
            guard let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestVerifyInit(context, nil, EVPKeySupport.sha256.md, nil, key) == 1 else {
                OpenSSLError.drainQueue()
                return false
            }
            let rc = der.withUnsafeBufferPointer {
                EVP_DigestVerify(context, $0.baseAddress, $0.count, message.baseAddress, message.count)
            }
            guard rc == 1 else {
                OpenSSLError.drainQueue()
                return false
            }
            return true
        }
    }

    /// `R‖S` → DER `ECDSA-Sig-Value`, which is what libcrypto verifies.
    static func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of both numbers.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    /// DER `ECDSA-Sig-Value` → `R‖S`, each left-padded to 32 bytes.
    static func rawSignature(fromDER der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            var raw = [UInt8](repeating: 0, count: 64)
            let ok = raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
            return ok ? raw : nil
        }
    }
}
