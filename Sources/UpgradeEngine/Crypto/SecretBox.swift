import COpenSSL

/// Authenticated encryption of small secrets at rest (TOTP secrets, refresh tokens): AES-256-GCM.
///
/// Sealed format, version 1: `0x01 ‖ nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`. The nonce is
/// random per seal; at 2^32 seals per key the chance of a repeated nonce stays below 2^-32 (NIST SP
/// 800-38D §8.3). The additional authenticated data is `0x01 ‖ UTF-8(context)`: binding the version
/// stops a downgrade, and binding the context (for example `"totp-secret:<account id>"`) means a
/// ciphertext copied into another row or column does not open there.
public struct SecretBox: Sendable {
    public static let keyLength = 32
    static let version: UInt8 = 1
    static let nonceLength = 12
    static let tagLength = 16
    /// The smallest sealed value: version, nonce and tag around an empty plaintext.
    static let overhead = 1 + nonceLength + tagLength

    private let key: [UInt8]
    /// True for the box made by `developmentOnly()`, so start-up code can refuse it outside dev mode.
    public let isDevelopmentOnly: Bool

    public init(key: [UInt8]) throws(SecretBoxError) {
        guard key.count == Self.keyLength else {
            throw SecretBoxError(
                .invalidKeyLength,
                "a secret-box key must be exactly \(Self.keyLength) bytes, not \(key.count)"
            )
        }
        self.key = key
        self.isDevelopmentOnly = false
    }

    private init(developmentKey: [UInt8]) {
        self.key = developmentKey
        self.isDevelopmentOnly = true
    }

    /// The text whose SHA-256 is the development key. Published here on purpose: the key is not secret.
    public static let developmentKeyDerivation = "siwa-upgrade INSECURE development-only secret box key v1"

    /// A box under a fixed, publicly known key: SHA-256 of `developmentKeyDerivation`.
    ///
    /// INSECURE. Anyone can read what it seals. Use it only when the caller is explicitly in development
    /// mode (`serve --dev`, the demo, tests); production must load `UPGRADE_SECRET_KEY_FILE` through
    /// `SecretKeyFile`. `isDevelopmentOnly` is true on the result so start-up code can check.
    public static func developmentOnly() -> SecretBox {
        SecretBox(developmentKey: Digest.sha256(developmentKeyDerivation))
    }

    /// A key for `purpose` derived from this box's key (HMAC-SHA256(key, "siwa-upgrade derived key v1: " ‖
    /// purpose)), so one configured secret serves several uses without one use's output helping
    /// against another. The derived key stays inside the returned authenticator.
    public func authenticator(purpose: String) -> MessageAuthenticator {
        MessageAuthenticator(
            key: Digest.hmac(.sha256, key: key, message: Array("siwa-upgrade derived key v1: \(purpose)".utf8))
        )
    }

    /// Encrypts `plaintext` for `context` under a fresh random nonce.
    public func seal(_ plaintext: [UInt8], context: String) -> [UInt8] {
        seal(plaintext, context: context, nonce: SecureRandom.bytes(Self.nonceLength))
    }

    /// Sealing with a chosen nonce, for known-answer tests only: reusing a nonce under one key breaks GCM.
    func seal(_ plaintext: [UInt8], context: String, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == Self.nonceLength)
        precondition(plaintext.count < Int32.max - Int32(Self.overhead), "plaintext too large to seal")
        let aad = Self.associatedData(context)
        var sealed = [UInt8](repeating: 0, count: Self.overhead + plaintext.count)
        sealed[0] = Self.version
        sealed.replaceSubrange(1...Self.nonceLength, with: nonce)

        let bodyStart = 1 + Self.nonceLength
        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("\(OpenSSLError.drain("EVP_CIPHER_CTX_new"))") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok = sealed.withUnsafeMutableBufferPointer { out -> Bool in
            // `out` holds at least `overhead` bytes, so its base address exists.
            let body = out.baseAddress! + bodyStart
            let tag = body + plaintext.count
            guard EVP_EncryptInit_ex(ctx, EVPKeySupport.aes256GCM.cipher, nil, key, nonce) == 1 else { return false }
            var length: Int32 = 0
            guard EVP_EncryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { return false }
            if !plaintext.isEmpty {
                let updated = plaintext.withUnsafeBufferPointer { input in
                    EVP_EncryptUpdate(ctx, body, &length, input.baseAddress, Int32(input.count)) == 1
                }
                guard updated, length == Int32(plaintext.count) else { return false }
            }
            guard EVP_EncryptFinal_ex(ctx, tag, &length) == 1, length == 0 else { return false }
            return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(Self.tagLength), tag) == 1
        }
        // Encryption under a valid 32-byte key cannot fail short of memory exhaustion or a broken libcrypto;
        // there is nothing safe to return then, and returning unsealed data is out of the question.
        precondition(ok, "AES-256-GCM encryption failed: \(OpenSSLError.drain("seal"))")
        return sealed
    }

    /// Decrypts a value sealed for `context`, or throws without returning any of the plaintext.
    public func open(_ sealed: [UInt8], context: String) throws(SecretBoxError) -> [UInt8] {
        guard sealed.count >= Self.overhead else {
            throw SecretBoxError(
                .truncated,
                "sealed value is \(sealed.count) bytes; a sealed value is at least \(Self.overhead) bytes"
            )
        }
        guard sealed[0] == Self.version else {
            throw SecretBoxError(
                .unsupportedVersion,
                "sealed value has format version \(sealed[0]); this build opens version \(Self.version) only"
            )
        }
        let aad = Self.associatedData(context)
        let bodyStart = 1 + Self.nonceLength
        let bodyLength = sealed.count - Self.overhead
        // At least one byte, so the output pointer exists even for an empty plaintext.
        var plaintext = [UInt8](repeating: 0, count: max(bodyLength, 1))

        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("\(OpenSSLError.drain("EVP_CIPHER_CTX_new"))") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok = sealed.withUnsafeBufferPointer { input -> Bool in
            plaintext.withUnsafeMutableBufferPointer { out -> Bool in
                let nonce = input.baseAddress! + 1
                let body = input.baseAddress! + bodyStart
                let output = out.baseAddress!
                guard EVP_DecryptInit_ex(ctx, EVPKeySupport.aes256GCM.cipher, nil, key, nonce) == 1 else {
                    return false
                }
                var length: Int32 = 0
                guard EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { return false }
                if bodyLength > 0 {
                    guard EVP_DecryptUpdate(ctx, output, &length, body, Int32(bodyLength)) == 1,
                        length == Int32(bodyLength)
                    else { return false }
                }
                // OpenSSL takes a non-const pointer for SET_TAG but only reads it.
                let tag = UnsafeMutableRawPointer(mutating: body + bodyLength)
                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(Self.tagLength), tag) == 1 else {
                    return false
                }
                var finalLength: Int32 = 0
                return EVP_DecryptFinal_ex(ctx, output + bodyLength, &finalLength) == 1 && finalLength == 0
            }
        }
        guard ok else {
            // A failed tag check leaves entries in the thread's error queue; they must not leak into
            // the next, unrelated call.
            OpenSSLError.drainQueue()
            // Best effort: wipe what was decrypted before the tag check failed, so unauthenticated
            // plaintext is not left in memory handed back to the allocator.
            for index in plaintext.indices { plaintext[index] = 0 }
            throw SecretBoxError(
                .authenticationFailed,
                "sealed value does not authenticate: it was altered, sealed under another key, "
                    + "or sealed for another context"
            )
        }
        plaintext.removeLast(plaintext.count - bodyLength)
        return plaintext
    }

    private static func associatedData(_ context: String) -> [UInt8] {
        [version] + Array(context.utf8)
    }
}

// The key must never reach a log line or a test failure message through reflection or interpolation.
extension SecretBox: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { isDevelopmentOnly ? "SecretBox(development-only key)" : "SecretBox(key redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
