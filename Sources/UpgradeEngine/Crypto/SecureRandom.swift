import CSystem
import Glibc

/// Cryptographically secure random bytes from the kernel (`getrandom(2)`), the source OpenSSL's own
/// DRBG is seeded from. Asking the kernel directly costs one system call; `RAND_bytes` cost about
/// ten thousand instructions per call here (provider lookup, locks, a `getpid` for fork detection,
/// the DRBG itself), and an upgrade draws random bytes four times.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0)
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }

    /// Fills `buffer` completely. getrandom returns at most 32 MiB per call and may stop early for a
    /// signal; it fails otherwise only for bad arguments or a kernel without it (Linux < 3.17), and
    /// then there is nothing safe to do: never fall back to weaker randomness.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            let got = csystem_getrandom(buffer.baseAddress! + offset, UInt(buffer.count - offset))
            if got > 0 {
                offset += got
            } else {
                let number = errno
                precondition(got < 0 && number == EINTR, "getrandom failed with errno \(number)")
            }
        }
    }

    /// A random token of `byteCount` bytes, base64url without padding (URL- and header-safe).
    public static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(byteCount))
    }
}
