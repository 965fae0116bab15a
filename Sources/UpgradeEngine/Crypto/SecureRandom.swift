import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0)
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let rc = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        // A DRBG that cannot produce output leaves nothing safe to do: never fall back to weak randomness.
        precondition(rc == 1, "RAND_bytes failed: \(OpenSSLError.drainQueue())")
        return out
    }

    /// A random token of `byteCount` bytes, base64url without padding (URL- and header-safe).
    public static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(byteCount))
    }
}
