import COpenSSL

/// What the RSA and P-256 key wrappers share: PEM and DER in and out of an `EVP_PKEY`, signing,
/// and the SHA-256 implementation fetched once.
enum EVPKeySupport {
    /// Algorithm implementations fetched from the default provider once.
    ///
    /// Invariant behind `@unchecked Sendable`: each object is fetched at first use, never freed and
    /// never mutated; OpenSSL documents fetched algorithm objects as safe to share between threads.
    /// Passing the legacy `EVP_sha256()` or `EVP_aes_256_gcm()` instead makes every operation look
    /// the implementation up again under a lock, which measurably slows token verification.
    struct FetchedDigest: @unchecked Sendable {
        let md: OpaquePointer
    }

    struct FetchedCipher: @unchecked Sendable {
        let cipher: OpaquePointer
    }

    /// Only for phpass hashes (`PasswordHash.Phpass`), which are made of iterated MD5.
    static let md5 = fetchDigest(copenssl_name_md5(), "MD5")
    static let sha1 = fetchDigest(copenssl_name_sha1(), "SHA-1")
    static let sha256 = fetchDigest(copenssl_name_sha256(), "SHA-256")
    static let sha512 = fetchDigest(copenssl_name_sha512(), "SHA-512")

    static let aes256GCM: FetchedCipher = {
        guard let cipher = EVP_CIPHER_fetch(nil, copenssl_name_aes_256_gcm(), nil) else {
            preconditionFailure("AES-256-GCM is not available from libcrypto: \(OpenSSLError.drainQueue())")
        }
        return FetchedCipher(cipher: cipher)
    }()

    /// Only for Firebase scrypt hashes (`PasswordHash.FirebaseScrypt`), which end in AES-256-CTR.
    static let aes256CTR: FetchedCipher = {
        guard let cipher = EVP_CIPHER_fetch(nil, copenssl_name_aes_256_ctr(), nil) else {
            preconditionFailure("AES-256-CTR is not available from libcrypto: \(OpenSSLError.drainQueue())")
        }
        return FetchedCipher(cipher: cipher)
    }()

    private static func fetchDigest(_ name: UnsafePointer<CChar>, _ label: String) -> FetchedDigest {
        guard let md = EVP_MD_fetch(nil, name, nil) else {
            preconditionFailure("\(label) is not available from libcrypto: \(OpenSSLError.drainQueue())")
        }
        return FetchedDigest(md: md)
    }

    /// Runs `body` with a read-only memory BIO over `bytes`.
    static func withMemoryBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) -> T?) -> T? {
        bytes.withUnsafeBytes { buffer -> T? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    /// An SPKI `-----BEGIN PUBLIC KEY-----` document.
    static func readPublicKey(pem: String) -> OpaquePointer? {
        withMemoryBIO(Array(pem.utf8)) { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
    }

    /// A DER SubjectPublicKeyInfo; trailing bytes are refused.
    static func readPublicKey(der: [UInt8]) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let key = d2i_PUBKEY(nil, &cursor, buffer.count) else { return nil }
            guard cursor == base + buffer.count else {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
    }

    /// A PKCS#8 (or traditional) private key PEM. Encrypted keys are refused rather than prompting
    /// on the terminal, which is what OpenSSL does when no passphrase callback is given.
    static func readPrivateKey(pem: String) -> OpaquePointer? {
        withMemoryBIO(Array(pem.utf8)) { bio in
            PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
    }

    /// Collects what a write-to-BIO function produced.
    private static func writeToBIO(_ write: (OpaquePointer) -> Int32) -> [UInt8]? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_bio_get_mem_data(bio, &data)
        guard length > 0, let data else { return nil }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// PKCS#8 `-----BEGIN PRIVATE KEY-----`, unencrypted.
    static func privateKeyPEM(_ key: OpaquePointer) -> String {
        guard let bytes = writeToBIO({ PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }) else {
            preconditionFailure("PEM_write_bio_PrivateKey failed: \(OpenSSLError.drainQueue())")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func publicKeyDER(_ key: OpaquePointer) -> [UInt8] {
        let length = i2d_PUBKEY(key, nil)
        precondition(length > 0, "i2d_PUBKEY failed: \(OpenSSLError.drainQueue())")
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(key, &cursor)
        }
        precondition(written == length, "i2d_PUBKEY failed: \(OpenSSLError.drainQueue())")
        return out
    }

    /// `EVP_DigestSign` with SHA-256; the output is what the key type produces (PKCS#1 v1.5 for RSA,
    /// DER ECDSA-Sig-Value for EC). A fresh context per call keeps signing thread-safe.
    static func signSHA256(_ key: OpaquePointer, message: UnsafeRawBufferPointer) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        // A signing failure with a key we loaded and checked means libcrypto itself is broken:
        // there is no safe way to continue, as with a failing random generator.
        guard EVP_DigestSignInit(context, nil, sha256.md, nil, key) == 1 else {
            preconditionFailure("EVP_DigestSignInit failed: \(OpenSSLError.drainQueue())")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message.baseAddress, message.count) == 1 else {
            preconditionFailure("EVP_DigestSign failed: \(OpenSSLError.drainQueue())")
        }
        var signature = [UInt8](repeating: 0, count: length)
        let rc = signature.withUnsafeMutableBufferPointer {
            EVP_DigestSign(context, $0.baseAddress, &length, message.baseAddress, message.count)
        }
        precondition(rc == 1, "EVP_DigestSign failed: \(OpenSSLError.drainQueue())")
        signature.removeLast(signature.count - length)
        return signature
    }

    /// A big-endian unsigned parameter of `key` (such as RSA `n` or `e`), minimal length.
    static func bigNumberParameter(_ key: OpaquePointer, _ name: UnsafePointer<CChar>) -> [UInt8]? {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else {
            OpenSSLError.drainQueue()
            return nil
        }
        defer { BN_free(number) }
        var out = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
        let written = out.withUnsafeMutableBufferPointer { BN_bn2bin(number, $0.baseAddress) }
        guard Int(written) == out.count else { return nil }
        return out
    }

    /// Runs `body` on the contiguous bytes of `collection`, copying only when it is not contiguous.
    @inline(__always)
    static func withBytes<C: Collection<UInt8>, T>(_ collection: C, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        if let result = collection.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(collection).withUnsafeBytes(body)
    }
}
