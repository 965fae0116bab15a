import COpenSSL
import Synchronization

/// Authenticated encryption of small secrets at rest (TOTP secrets, refresh tokens, hash parameters):
/// AES-256-GCM under a keyring of named keys, newest first (docs/architecture.md §10.4).
///
/// Sealed format, version 2: `0x02 ‖ key id ‖ 0x00 ‖ nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`,
/// with the additional authenticated data `0x02 ‖ key id ‖ 0x00 ‖ UTF-8(context)`. New values are
/// sealed under the newest key; `open` picks the key by the id the value records, so any listed key
/// reads. Version 1 (`0x01 ‖ nonce ‖ ciphertext ‖ tag`, AAD `0x01 ‖ UTF-8(context)`) is what a single
/// key sealed before keyrings; it opens with the key whose id is `0`. Key ids are 1-32 of
/// `[A-Za-z0-9_-]`, so the 0x00 after the id is unambiguous and SQL can read the id off a stored value.
///
/// The nonce is random per seal; at 2^32 seals per key the chance of a repeated nonce stays below
/// 2^-32 (NIST SP 800-38D §8.3). Binding the header stops a downgrade and a swapped key id; binding
/// the context (for example `"totp-secret:<account id>"`) means a ciphertext copied into another row
/// or column does not open there.
///
/// Copies share their keys: `replaceKeys(with:)` changes them for every copy at once (a reload), and
/// each `seal` or `open` reads them once, so one call never mixes two keyrings.
public struct SecretBox: Sendable {
    public static let keyLength = 32
    static let version1: UInt8 = 1
    static let version2: UInt8 = 2
    static let nonceLength = 12
    static let tagLength = 16
    static let maximumKeyIDLength = 32
    /// The id that version-1 values and `SecretBox(key:)` use.
    public static let legacyKeyID = "0"
    /// The smallest version-1 value: version, nonce and tag around an empty plaintext.
    static let overhead = 1 + nonceLength + tagLength

    /// One named key.
    struct Key: Sendable {
        let id: String
        let bytes: [UInt8]
    }

    /// What the box seals and opens with at one moment.
    struct Keyring: Sendable {
        /// Newest first; never empty.
        let keys: [Key]
        let isDevelopmentOnly: Bool

        var newest: Key { keys[0] }

        func key(id: String) -> Key? { keys.first { $0.id == id } }
    }

    /// Shared by every copy of a box. Mutex-guarded, so a reload and concurrent seals are safe.
    final class Storage: Sendable {
        let keyring: Mutex<Keyring>
        init(_ keyring: Keyring) { self.keyring = Mutex(keyring) }
    }

    private let storage: Storage

    /// One key, with id `0`: the box of a 32-byte key file.
    public init(key: [UInt8]) throws(SecretBoxError) {
        try self.init(keys: [(id: Self.legacyKeyID, key: key)])
    }

    /// A keyring, newest first: at least one key, ids valid and unique, keys of 32 bytes.
    public init(keys: [(id: String, key: [UInt8])]) throws(SecretBoxError) {
        guard !keys.isEmpty else { throw SecretBoxError(.invalidKeyring, "a keyring needs at least one key") }
        var seen = Set<String>()
        for (id, key) in keys {
            guard Self.isValidKeyID(id) else {
                throw SecretBoxError(
                    .invalidKeyring,
                    "key id '\(Self.printable(id))' is not 1-\(Self.maximumKeyIDLength) of letters, digits, '-' or '_'"
                )
            }
            guard seen.insert(id).inserted else {
                throw SecretBoxError(.invalidKeyring, "key id '\(id)' is listed twice; key ids must be unique")
            }
            guard key.count == Self.keyLength else {
                throw SecretBoxError(
                    .invalidKeyLength,
                    "a secret-box key must be exactly \(Self.keyLength) bytes, not \(key.count) (key id '\(id)')"
                )
            }
        }
        storage = Storage(Keyring(keys: keys.map { Key(id: $0.id, bytes: $0.key) }, isDevelopmentOnly: false))
    }

    private init(developmentKey: [UInt8]) {
        storage = Storage(Keyring(keys: [Key(id: Self.legacyKeyID, bytes: developmentKey)], isDevelopmentOnly: true))
    }

    /// The text whose SHA-256 is the development key. Published here on purpose: the key is not secret.
    public static let developmentKeyDerivation = "siwa-upgrade INSECURE development-only secret box key v1"

    /// A box under a fixed, publicly known key (id `0`): SHA-256 of `developmentKeyDerivation`.
    ///
    /// INSECURE. Anyone can read what it seals. Use it only when the caller is explicitly in development
    /// mode (`serve --dev`, the demo, tests); production must load `UPGRADE_SECRET_KEY_FILE` through
    /// `SecretKeyFile`. `isDevelopmentOnly` is true on the result so start-up code can check.
    public static func developmentOnly() -> SecretBox {
        SecretBox(developmentKey: Digest.sha256(developmentKeyDerivation))
    }

    var keyring: Keyring { storage.keyring.withLock { $0 } }

    /// True for the box made by `developmentOnly()` (or one whose keys were replaced by its keys).
    public var isDevelopmentOnly: Bool { keyring.isDevelopmentOnly }

    /// The ids of the listed keys, newest first. Ids are names, not secrets.
    public var keyIDs: [String] { keyring.keys.map(\.id) }

    /// The id new values are sealed under.
    public var newestKeyID: String { keyring.newest.id }

    /// Makes every copy of this box (the server's services, authenticators) seal and open with
    /// `other`'s keys from now on. A seal or open already running finishes with the keys it read.
    public func replaceKeys(with other: SecretBox) {
        let replacement = other.keyring
        storage.keyring.withLock { $0 = replacement }
    }

    /// The ids this box and `other` both list under different keys: a key replaced under its old
    /// id, which would leave every value sealed under that id unopenable (docs/architecture.md §10.4).
    public func keyIDsWithChangedKeys(in other: SecretBox) -> [String] {
        let theirs = other.keyring
        return keyring.keys.compactMap { key in
            guard let their = theirs.key(id: key.id), !ConstantTime.equals(their.bytes, key.bytes) else { return nil }
            return key.id
        }
    }

    /// Whether `other` lists every key id this box lists.
    public func isKeptWhole(by other: SecretBox) -> Bool {
        let theirs = Set(other.keyIDs)
        return keyIDs.allSatisfy { theirs.contains($0) }
    }

    /// Whether `id` may name a key: 1-32 of `[A-Za-z0-9_-]`.
    public static func isValidKeyID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        return (1...maximumKeyIDLength).contains(bytes.count) && bytes.allSatisfy(isKeyIDByte)
    }

    static func isKeyIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// The id of the key a stored value was sealed under (`0` for version 1), or nil when `sealed`
    /// is not a sealed value this build knows. Reads the header only.
    public static func keyID(of sealed: [UInt8]) -> String? {
        guard let header = try? Header(sealed) else { return nil }
        return header.keyID
    }

    /// Derived authenticators for `purpose` (HMAC-SHA256(key, "siwa-upgrade derived key v1: " ‖
    /// purpose)), so one configured secret serves several uses without one use's output helping
    /// against another. The authenticator follows `replaceKeys`: it signs under the newest key and
    /// accepts a tag made under any listed one, so tags handed out before a rotation stay valid
    /// while their key is listed.
    public func authenticator(purpose: String) -> MessageAuthenticator {
        let storage = self.storage
        let label = Array("siwa-upgrade derived key v1: \(purpose)".utf8)
        return MessageAuthenticator {
            storage.keyring.withLock { $0 }.keys.map { Digest.hmac(.sha256, key: $0.bytes, message: label) }
        }
    }

    /// Encrypts `plaintext` for `context` under the newest key and a fresh random nonce.
    public func seal(_ plaintext: [UInt8], context: String) -> [UInt8] {
        seal(plaintext, context: context, nonce: SecureRandom.bytes(Self.nonceLength))
    }

    /// Encrypts `plaintext` for `context` under the listed key `keyID` (not necessarily the newest),
    /// or nil when the keyring does not list it: a key's check value (`KeyChecks`).
    public func seal(_ plaintext: [UInt8], context: String, keyID: String) -> [UInt8]? {
        keyring.key(id: keyID).map {
            seal(plaintext, context: context, nonce: SecureRandom.bytes(Self.nonceLength), under: $0)
        }
    }

    /// Sealing with a chosen nonce, for known-answer tests only: reusing a nonce under one key breaks GCM.
    func seal(_ plaintext: [UInt8], context: String, nonce: [UInt8]) -> [UInt8] {
        seal(plaintext, context: context, nonce: nonce, under: keyring.newest)
    }

    /// Format version 2 under `key`, its id in the header.
    private func seal(_ plaintext: [UInt8], context: String, nonce: [UInt8], under key: Key) -> [UInt8] {
        Self.seal(plaintext, context: context, nonce: nonce, key: key.bytes, header: Header.bytes(keyID: key.id))
    }

    /// Sealing in format version 1, for known-answer tests of the format older values are in.
    func sealVersion1(_ plaintext: [UInt8], context: String, nonce: [UInt8]) throws(SecretBoxError) -> [UInt8] {
        guard let key = keyring.key(id: Self.legacyKeyID) else { throw Self.missingKey(Self.legacyKeyID) }
        return Self.seal(plaintext, context: context, nonce: nonce, key: key.bytes, header: [Self.version1])
    }

    private static func seal(
        _ plaintext: [UInt8],
        context: String,
        nonce: [UInt8],
        key: [UInt8],
        header: [UInt8]
    ) -> [UInt8] {
        precondition(nonce.count == nonceLength)
        precondition(plaintext.count < Int32.max - Int32(overhead + header.count), "plaintext too large to seal")
        let aad = header + Array(context.utf8)
        var sealed = header
        sealed.reserveCapacity(header.count + nonceLength + plaintext.count + tagLength)
        sealed += nonce
        sealed += [UInt8](repeating: 0, count: plaintext.count + tagLength)

        let bodyStart = header.count + nonceLength
        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("\(OpenSSLError.drain("EVP_CIPHER_CTX_new"))") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok = sealed.withUnsafeMutableBufferPointer { out -> Bool in
            // `out` holds at least the header, nonce and tag, so its base address exists.
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
            return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), tag) == 1
        }
        // Encryption under a valid 32-byte key cannot fail short of memory exhaustion or a broken libcrypto;
        // there is nothing safe to return then, and returning unsealed data is out of the question.
        precondition(ok, "AES-256-GCM encryption failed: \(OpenSSLError.drain("seal"))")
        return sealed
    }

    /// Decrypts a value sealed for `context` with the key it names, or throws without returning any of
    /// the plaintext. A key missing from the keyring throws `.unknownKey` naming its id.
    public func open(_ sealed: [UInt8], context: String) throws(SecretBoxError) -> [UInt8] {
        let header = try Header(sealed)
        guard let key = keyring.key(id: header.keyID) else { throw Self.missingKey(header.keyID) }
        let aad = Array(sealed[..<header.length]) + Array(context.utf8)
        let nonceStart = header.length
        let bodyStart = nonceStart + Self.nonceLength
        let bodyLength = sealed.count - bodyStart - Self.tagLength
        // At least one byte, so the output pointer exists even for an empty plaintext.
        var plaintext = [UInt8](repeating: 0, count: max(bodyLength, 1))

        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("\(OpenSSLError.drain("EVP_CIPHER_CTX_new"))") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok = sealed.withUnsafeBufferPointer { input -> Bool in
            plaintext.withUnsafeMutableBufferPointer { out -> Bool in
                let nonce = input.baseAddress! + nonceStart
                let body = input.baseAddress! + bodyStart
                let output = out.baseAddress!
                guard EVP_DecryptInit_ex(ctx, EVPKeySupport.aes256GCM.cipher, nil, key.bytes, nonce) == 1 else {
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
                "sealed value does not authenticate under key '\(header.keyID)': it was altered, sealed under "
                    + "another key of that id, or sealed for another context"
            )
        }
        plaintext.removeLast(plaintext.count - bodyLength)
        return plaintext
    }

    static func missingKey(_ id: String) -> SecretBoxError {
        SecretBoxError(
            .unknownKey,
            "sealed value needs key '\(id)', which is not in the keyring; add it back to UPGRADE_SECRET_KEY_FILE"
        )
    }

    /// An id as it may appear in a message: only id characters, at most 32 of them.
    static func printable(_ id: String) -> String {
        String(
            decoding: id.utf8.prefix(maximumKeyIDLength).map { isKeyIDByte($0) ? $0 : UInt8(ascii: "?") },
            as: UTF8.self
        )
    }

    /// The part of a sealed value before the nonce.
    struct Header {
        let keyID: String
        /// Bytes before the nonce.
        let length: Int

        static func bytes(keyID id: String) -> [UInt8] { [SecretBox.version2] + Array(id.utf8) + [0] }

        init(_ sealed: [UInt8]) throws(SecretBoxError) {
            guard let version = sealed.first else { throw Self.truncated(sealed.count, minimum: overhead) }
            switch version {
            case SecretBox.version1:
                keyID = legacyKeyID
                length = 1
            case SecretBox.version2:
                guard let end = sealed.prefix(maximumKeyIDLength + 2).firstIndex(of: 0) else {
                    throw SecretBoxError(
                        .unsupportedVersion,
                        "sealed value of format version 2 has no key id of 1-\(maximumKeyIDLength) bytes"
                    )
                }
                let id = sealed[1..<end]
                guard !id.isEmpty, id.allSatisfy(isKeyIDByte) else {
                    throw SecretBoxError(.unsupportedVersion, "sealed value of format version 2 has a malformed key id")
                }
                keyID = String(decoding: id, as: UTF8.self)
                length = end + 1
            default:
                throw SecretBoxError(
                    .unsupportedVersion,
                    "sealed value has format version \(version); this build opens versions 1 and 2"
                )
            }
            let minimum = length + nonceLength + tagLength
            guard sealed.count >= minimum else { throw Self.truncated(sealed.count, minimum: minimum) }
        }

        private static func truncated(_ count: Int, minimum: Int) -> SecretBoxError {
            SecretBoxError(
                .truncated,
                "sealed value is \(count) bytes; a sealed value of its format is at least \(minimum) bytes"
            )
        }
    }
}

// The keys must never reach a log line or a test failure message through reflection or interpolation.
extension SecretBox: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let keyring = self.keyring
        if keyring.isDevelopmentOnly { return "SecretBox(development-only key)" }
        return "SecretBox(key ids \(keyring.keys.map(\.id).joined(separator: ", ")); keys redacted)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
