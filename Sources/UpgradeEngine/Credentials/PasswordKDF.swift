import CArgon2
import CCrypt
import COpenSSL
import Foundation

/// The C key derivations behind the stored-password formats.
///
/// Every call keeps its state in locals and per-call allocations (libxcrypt's `struct crypt_data`,
/// libargon2's memory, OpenSSL's scrypt buffer), so any number of calls may run at once on any
/// threads. Buffers handed to C always have at least one byte, because an empty Swift buffer may have
/// no base address and some of these functions treat a NULL pointer differently from an empty input.
enum PasswordKDF {
    /// libxcrypt's limit on the passphrase, terminating NUL included.
    static let maxCryptPassphraseBytes = Int(CRYPT_MAX_PASSPHRASE_SIZE) - 1

    /// Runs libxcrypt's `crypt_rn` on `setting` (the whole stored hash) and returns its output.
    static func crypt(password: [UInt8], setting: String, scheme: String) throws(PasswordHashError) -> [UInt8] {
        // crypt takes a C string: everything after a NUL would be ignored, so "secret\0anything"
        // would match the hash of "secret". Refuse instead of truncating.
        guard !password.contains(0) else {
            throw PasswordHashError(
                .invalidPassword,
                "the password contains a NUL byte, which \(scheme) hashes cannot represent"
            )
        }
        guard password.count <= maxCryptPassphraseBytes else {
            throw PasswordHashError(
                .invalidPassword,
                "the password is \(password.count) bytes; \(scheme) hashes are checked by libxcrypt, "
                    + "which takes at most \(maxCryptPassphraseBytes)"
            )
        }
        var phrase = password.map { CChar(bitPattern: $0) } + [0]
        var output = [CChar](repeating: 0, count: Int(CRYPT_OUTPUT_SIZE))
        defer {
            wipe(&phrase)
            wipe(&output)
        }
        let status = setting.withCString { settingPointer in
            phrase.withUnsafeBufferPointer { phrasePointer in
                output.withUnsafeMutableBufferPointer { outputPointer in
                    ccrypt_rn(phrasePointer.baseAddress, settingPointer, outputPointer.baseAddress, outputPointer.count)
                }
            }
        }
        switch status {
        case 0:
            let length = output.firstIndex(of: 0) ?? output.count
            return output[..<length].map { UInt8(bitPattern: $0) }
        case EINVAL:
            throw .malformed(scheme, "libxcrypt refused the stored setting")
        case ENOMEM:
            throw PasswordHashError(.internalFailure, "libxcrypt ran out of memory checking a \(scheme) hash")
        default:
            throw PasswordHashError(
                .internalFailure,
                "libxcrypt failed checking a \(scheme) hash: \(String(cString: strerror(status)))"
            )
        }
    }

    static func argon2(
        _ variant: PasswordHash.Argon2.Variant,
        version: UInt32,
        password: [UInt8],
        salt: [UInt8],
        memoryKiB: Int,
        iterations: Int,
        parallelism: Int,
        outputLength: Int
    ) throws(PasswordHashError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        var passwordCopy = password + [0]
        var saltCopy = salt + [0]
        defer { wipe(&passwordCopy) }
        let status = out.withUnsafeMutableBufferPointer { outPointer in
            passwordCopy.withUnsafeMutableBufferPointer { passwordPointer in
                saltCopy.withUnsafeMutableBufferPointer { saltPointer in
                    var context = argon2_context()
                    context.out = outPointer.baseAddress
                    context.outlen = UInt32(outputLength)
                    context.pwd = passwordPointer.baseAddress
                    context.pwdlen = UInt32(password.count)
                    context.salt = saltPointer.baseAddress
                    context.saltlen = UInt32(salt.count)
                    context.t_cost = UInt32(iterations)
                    context.m_cost = UInt32(memoryKiB)
                    context.lanes = UInt32(parallelism)
                    // One thread fills the lanes in turn; the output does not depend on the thread
                    // count. Concurrency then stays with the caller's executor instead of starting
                    // pthreads inside every verification.
                    context.threads = 1
                    context.version = version
                    // ARGON2_DEFAULT_FLAGS: our buffers are wiped by us, not cleared by the library.
                    context.flags = 0
                    return argon2_ctx(&context, variant == .id ? Argon2_id : Argon2_i)
                }
            }
        }
        guard status == ARGON2_OK.rawValue else {
            wipe(&out)
            let reason = String(cString: argon2_error_message(status))
            throw PasswordHashError(.internalFailure, "libargon2 failed: \(reason)")
        }
        return out
    }

    static func scrypt(
        password: [UInt8],
        salt: [UInt8],
        logN: Int,
        r: Int,
        p: Int,
        outputLength: Int
    ) throws(PasswordHashError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        var passwordCopy = password + [0]
        let saltCopy = salt + [0]
        defer { wipe(&passwordCopy) }
        let n = UInt64(1) << UInt64(logN)
        // Exactly what OpenSSL allocates (128·r·p for B, 128·r·(N + 2) for V); the bounds were
        // checked when the hash was parsed. Passing 0 would mean OpenSSL's own 32 MiB cap instead.
        let maxMemory = UInt64(128 * r) * (n + 2 + UInt64(p))
        let status = out.withUnsafeMutableBufferPointer { outPointer in
            passwordCopy.withUnsafeBytes { passwordPointer in
                saltCopy.withUnsafeBufferPointer { saltPointer in
                    EVP_PBE_scrypt(
                        passwordPointer.baseAddress?.assumingMemoryBound(to: CChar.self),
                        password.count,
                        saltPointer.baseAddress,
                        salt.count,
                        n,
                        UInt64(r),
                        UInt64(p),
                        maxMemory,
                        outPointer.baseAddress,
                        outputLength
                    )
                }
            }
        }
        guard status == 1 else {
            wipe(&out)
            let details = OpenSSLError.drainQueue().joined(separator: "; ")
            throw PasswordHashError(.internalFailure, "OpenSSL scrypt failed: \(details)")
        }
        return out
    }

    static func pbkdf2(
        _ digest: DigestAlgorithm,
        password: [UInt8],
        salt: [UInt8],
        iterations: Int,
        outputLength: Int
    ) throws(PasswordHashError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        var passwordCopy = password + [0]
        let saltCopy = salt + [0]
        defer { wipe(&passwordCopy) }
        let status = out.withUnsafeMutableBufferPointer { outPointer in
            passwordCopy.withUnsafeBytes { passwordPointer in
                saltCopy.withUnsafeBufferPointer { saltPointer in
                    PKCS5_PBKDF2_HMAC(
                        passwordPointer.baseAddress?.assumingMemoryBound(to: CChar.self),
                        Int32(password.count),
                        saltPointer.baseAddress,
                        Int32(salt.count),
                        Int32(iterations),
                        digest.evp,
                        Int32(outputLength),
                        outPointer.baseAddress
                    )
                }
            }
        }
        guard status == 1 else {
            wipe(&out)
            let details = OpenSSLError.drainQueue().joined(separator: "; ")
            throw PasswordHashError(.internalFailure, "OpenSSL PBKDF2 failed: \(details)")
        }
        return out
    }

    /// phpass's iterated digest: `h = D(salt ‖ password)`, then `iterations` times
    /// `h = D(h ‖ password)`, with one digest context reused throughout.
    static func phpass(
        _ md: OpaquePointer,
        password: [UInt8],
        salt: [UInt8],
        iterations: Int
    ) throws(PasswordHashError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else {
            throw PasswordHashError(.internalFailure, "OpenSSL could not allocate a digest context")
        }
        defer { EVP_MD_CTX_free(context) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MD_get_size(md)))
        var length: UInt32 = 0
        var ok = true
        password.withUnsafeBytes { passwordBytes in
            digest.withUnsafeMutableBytes { digestBytes in
                let out = digestBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                func step(_ first: UnsafeRawBufferPointer) {
                    ok =
                        ok && EVP_DigestInit_ex2(context, md, nil) == 1
                        && EVP_DigestUpdate(context, first.baseAddress, first.count) == 1
                        && EVP_DigestUpdate(context, passwordBytes.baseAddress, passwordBytes.count) == 1
                        && EVP_DigestFinal_ex(context, out, &length) == 1
                }
                salt.withUnsafeBytes { step($0) }
                // EVP_DigestUpdate has consumed the previous digest before EVP_DigestFinal_ex
                // overwrites it, so the buffer is its own input.
                let previous = UnsafeRawBufferPointer(digestBytes)
                for _ in 0..<iterations where ok { step(previous) }
            }
        }
        guard ok else {
            wipe(&digest)
            let details = OpenSSLError.drainQueue().joined(separator: "; ")
            throw PasswordHashError(.internalFailure, "OpenSSL digest failed: \(details)")
        }
        return digest
    }

    /// Overwrites a buffer that held a password or derived key, in a way the optimiser may not drop.
    /// AES-256-CTR of `input` under `key` from an all-zero counter block (Firebase scrypt's last step).
    static func aes256CTR(key: [UInt8], input: [UInt8]) throws(PasswordHashError) -> [UInt8] {
        precondition(key.count == 32)
        guard let context = EVP_CIPHER_CTX_new() else {
            throw PasswordHashError(.internalFailure, "OpenSSL could not allocate a cipher context")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        let iv = [UInt8](repeating: 0, count: 16)
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        var final: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard EVP_EncryptInit_ex(context, EVPKeySupport.aes256CTR.cipher, nil, key, iv) == 1,
                EVP_EncryptUpdate(context, buffer.baseAddress, &written, input, Int32(input.count)) == 1
            else { return false }
            return EVP_EncryptFinal_ex(context, buffer.baseAddress! + Int(written), &final) == 1
        }
        guard ok, Int(written + final) == input.count else {
            wipe(&out)
            let details = OpenSSLError.drainQueue().joined(separator: "; ")
            throw PasswordHashError(.internalFailure, "OpenSSL AES-256-CTR failed: \(details)")
        }
        out.removeLast(16)
        return out
    }

    static func wipe<T>(_ buffer: inout [T]) {
        buffer.withUnsafeMutableBytes { bytes in
            if let base = bytes.baseAddress, bytes.count > 0 { OPENSSL_cleanse(base, bytes.count) }
        }
    }
}
