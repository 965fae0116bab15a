/// Bounds on everything a stored hash or a password can make the verifier do.
///
/// A stored hash carries its own cost parameters, so an imported or tampered record could ask for
/// 2^31 bcrypt rounds or 4 GiB of argon2 memory and stall a worker for hours. `PasswordVerifier`
/// parses each hash strictly and compares every parameter with these limits *before* any key
/// derivation runs; a hash outside them is refused with `.parameterOutOfBounds` at the cost of a
/// string scan. The defaults admit what current and legacy deployments store (library defaults,
/// OWASP recommendations, Django and passlib defaults) with headroom, while keeping the worst
/// accepted verification to a few seconds of one core.
public struct PasswordHashLimits: Sendable, Hashable {
    /// Longest password accepted, in UTF-8 bytes (default 1024). Some formats do work proportional
    /// to the password's length on every round (sha-crypt), so an unbounded password is a denial of
    /// service. Passwords are compared as their exact UTF-8 bytes, without Unicode normalisation.
    /// Independently of this limit, the libxcrypt formats (bcrypt, sha-crypt, md5-crypt, yescrypt)
    /// take at most 511 bytes (`CRYPT_MAX_PASSPHRASE_SIZE` − 1), and bcrypt itself reads only the
    /// first 72 bytes: a longer password verifies exactly as it would with libxcrypt or OpenBSD,
    /// by its first 72 bytes.
    public var maxPasswordBytes: Int = 1024

    /// Longest stored hash accepted, in UTF-8 bytes (default 512). The longest legitimate encodings
    /// (PBKDF2-SHA512 or argon2 with 64-byte salts and outputs) stay well under 300.
    public var maxEncodedHashBytes: Int = 512

    /// bcrypt cost, the base-2 logarithm of the round count (default 4...16). 4 is the algorithm's
    /// minimum; 10–12 are today's library defaults; 16 already takes about four seconds.
    public var bcryptCost: ClosedRange<Int> = 4...16

    /// Largest argon2 memory parameter `m`, in KiB (default 262_144, 256 MiB). OWASP recommends
    /// 19 MiB to 46 MiB, argon2-cffi defaults to 64 MiB, Django to 100 MiB. The library's own floor
    /// (`m` ≥ 8·`p`) is enforced as well.
    public var argon2MaxMemoryKiB: Int = 262_144

    /// argon2 passes `t` (default 1...10). Published recommendations use 1 to 5.
    public var argon2Iterations: ClosedRange<Int> = 1...10

    /// argon2 lanes `p` (default 1...16). Django stores 8. Lanes are computed one after another on
    /// the calling thread, so `p` costs neither extra memory nor extra time; the bound only refuses
    /// values no deployment uses.
    public var argon2Parallelism: ClosedRange<Int> = 1...16

    /// Largest scrypt `log2(N)` (default 20, N = 1_048_576). passlib defaults to 16, libsodium's
    /// interactive `$7$` setting to 14.
    public var scryptMaxLogN: Int = 20

    /// Largest scrypt working memory, 128·N·r bytes (default 256 MiB). passlib's default (N = 2^16,
    /// r = 8) needs 64 MiB.
    public var scryptMaxMemoryBytes: Int = 256 << 20

    /// Largest scrypt `p` (default 4). Every lane repeats the whole memory-hard computation, so the
    /// worst accepted hash does four times the work of its memory bound. Every known generator uses 1.
    public var scryptMaxParallelism: Int = 4

    /// Largest yescrypt working memory, 128·N·r bytes (default 256 MiB). Debian's and Fedora's
    /// default (`$y$j9T$`: N = 4096, r = 32) needs 16 MiB.
    public var yescryptMaxMemoryBytes: Int = 256 << 20

    /// Largest yescrypt `p` (default 4); distributions store 1.
    public var yescryptMaxParallelism: Int = 4

    /// Largest yescrypt time parameter `t` (default 4); each step adds passes over the same memory.
    /// Distributions store 0.
    public var yescryptMaxTime: Int = 4

    /// PBKDF2 iterations, any digest (default 1_000...2_000_000). 1000 is RFC 8018's minimum; Django
    /// stores 1_000_000 and more in recent releases, passlib 29_000 (SHA-256) to 131_000 (SHA-1).
    public var pbkdf2Iterations: ClosedRange<Int> = 1_000...2_000_000

    /// sha256-crypt and sha512-crypt rounds (default 1_000...1_000_000). The specification clamps
    /// rounds to 1000...999_999_999 and the libraries clamp silently, so an out-of-range value must be
    /// refused before the call; a hash without `rounds=` uses the specification's 5000.
    public var shaCryptRounds: ClosedRange<Int> = 1_000...1_000_000

    public init() {}

    /// The limits documented on each property.
    public static let `default` = PasswordHashLimits()
}

extension PasswordHashLimits {
    /// The password's UTF-8 bytes, or `.invalidPassword` if it is longer than `maxPasswordBytes`.
    /// Checked before any work, for verification and hashing alike.
    func passwordBytes(_ password: String) throws(PasswordHashError) -> [UInt8] {
        let count = password.utf8.count
        guard count <= maxPasswordBytes else {
            throw PasswordHashError(
                .invalidPassword,
                "the password is \(count) bytes, longer than PasswordHashLimits.maxPasswordBytes (\(maxPasswordBytes))"
            )
        }
        return Array(password.utf8)
    }
}
