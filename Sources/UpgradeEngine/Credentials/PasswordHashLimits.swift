/// Bounds on everything a stored hash or a password can make the verifier do.
///
/// A stored hash carries its own cost parameters, so an imported or tampered record could ask for
/// 2^31 bcrypt rounds or 4 GiB of argon2 memory and stall a worker for hours. `PasswordVerifier`
/// parses each hash strictly and compares every parameter with these limits *before* any key
/// derivation runs; a hash outside them is refused with `.parameterOutOfBounds` at the cost of a
/// string scan. Anyone may make the server check a password, so what one check may cost is what a
/// stranger's guess costs: the defaults admit what current and legacy deployments store (library
/// defaults, OWASP recommendations, Django and passlib defaults) and keep the worst accepted check
/// under about half a second of one core (`costliestCheck`, measured per format in the README's
/// table). A failed check is answered no sooner than a floor derived from that bound
/// (`failureFloor`), so the hash an account holds does not show in the time a refusal takes.
public struct PasswordHashLimits: Sendable, Hashable {
    /// Longest password accepted, in UTF-8 bytes (default 1024). Some formats do work proportional
    /// to the password's length on every round (sha-crypt, bounded by `shaCryptMaxBlocks`), so an
    /// unbounded password is a denial of service. Passwords are compared as their exact UTF-8
    /// bytes, without Unicode normalisation. Independently of this limit, the libxcrypt formats
    /// (bcrypt, sha-crypt, md5-crypt, yescrypt) take at most 511 bytes (`CRYPT_MAX_PASSPHRASE_SIZE`
    /// − 1), and bcrypt itself reads only the first 72 bytes: a longer password verifies exactly as
    /// it would with libxcrypt or OpenBSD, by its first 72 bytes.
    public var maxPasswordBytes: Int = 1024

    /// Longest stored hash accepted, in UTF-8 bytes (default 512). The longest legitimate encodings
    /// (PBKDF2-SHA512 or argon2 with 64-byte salts and outputs) stay well under 300.
    public var maxEncodedHashBytes: Int = 512

    /// bcrypt cost, the base-2 logarithm of the round count (default 4...13). 4 is the algorithm's
    /// minimum; 10–12 are today's library defaults; each step doubles the time, and 13 takes about
    /// 0.4 s.
    public var bcryptCost: ClosedRange<Int> = 4...13

    /// Largest argon2 memory parameter `m`, in KiB (default 262_144, 256 MiB). OWASP recommends
    /// 19 MiB to 46 MiB, argon2-cffi defaults to 64 MiB, Django to 100 MiB. The library's own floor
    /// (`m` ≥ 8·`p`) is enforced as well.
    public var argon2MaxMemoryKiB: Int = 262_144

    /// argon2 passes `t` (default 1...10). Published recommendations use 1 to 5.
    public var argon2Iterations: ClosedRange<Int> = 1...10

    /// Largest argon2 work, `m`·`t` in KiB (default 327_680, 320 MiB): the memory filled per pass
    /// times the passes, which is what a check costs however it is split. Django's (100 MiB, t=2),
    /// argon2-cffi's and RFC 9106's second choice (64 MiB, t=3) and PHP's (64 MiB, t=4) fit;
    /// libsodium's "moderate" (256 MiB, t=3) does not.
    public var argon2MaxWorkKiB: Int = 327_680

    /// argon2 lanes `p` (default 1...16). Django stores 8. Lanes are computed one after another on
    /// the calling thread, so `p` costs neither extra memory nor extra time; the bound only refuses
    /// values no deployment uses.
    public var argon2Parallelism: ClosedRange<Int> = 1...16

    /// Largest scrypt `log2(N)` (default 20, N = 1_048_576). passlib defaults to 16, libsodium's
    /// interactive `$7$` setting to 14.
    public var scryptMaxLogN: Int = 20

    /// Largest scrypt working memory, 128·N·r bytes (default 128 MiB). passlib's default (N = 2^16,
    /// r = 8) needs 64 MiB.
    public var scryptMaxMemoryBytes: Int = 128 << 20

    /// Largest scrypt `p` (default 4). Every lane repeats the whole memory-hard computation; every
    /// known generator uses 1, Django 1 to 5 with less memory.
    public var scryptMaxParallelism: Int = 4

    /// Largest scrypt work, 128·N·r·p bytes (default 128 MiB): each lane fills its memory and reads
    /// it back once, so this is what a check costs.
    public var scryptMaxWorkBytes: Int = 128 << 20

    /// Largest yescrypt working memory, 128·N·r bytes (default 256 MiB). Debian's and Fedora's
    /// default (`$y$j9T$`: N = 4096, r = 32) needs 16 MiB.
    public var yescryptMaxMemoryBytes: Int = 256 << 20

    /// Largest yescrypt `p` (default 4); distributions store 1.
    public var yescryptMaxParallelism: Int = 4

    /// Largest yescrypt time parameter `t` (default 4); each step adds passes over the same memory.
    /// Distributions store 0.
    public var yescryptMaxTime: Int = 4

    /// Largest yescrypt work in bytes (default 384 MiB): its memory times the passes its mode, `t`
    /// and `p` make over it (`yescryptWorkBytes`). The distributions' default needs 21 MiB, their
    /// costliest setting (`YESCRYPT_COST_FACTOR` 9: 256 MiB, t = 0) 341 MiB.
    public var yescryptMaxWorkBytes: Int = 384 << 20

    /// PBKDF2 iterations with HMAC-SHA1 or HMAC-SHA256 (default 1_000...2_000_000). 1000 is
    /// RFC 8018's minimum; Django stores 1_200_000 in its 6.0 release, passlib 29_000 (SHA-256) to
    /// 131_000 (SHA-1).
    public var pbkdf2Iterations: ClosedRange<Int> = 1_000...2_000_000

    /// PBKDF2 iterations with HMAC-SHA512 (default 1_000...800_000), whose iteration costs about
    /// twice as much. passlib stores 25_000.
    public var pbkdf2SHA512Iterations: ClosedRange<Int> = 1_000...800_000

    /// sha256-crypt and sha512-crypt rounds (default 1_000...1_000_000). The specification clamps
    /// rounds to 1000...999_999_999 and the libraries clamp silently, so an out-of-range value must be
    /// refused before the call; a hash without `rounds=` uses the specification's 5000. Within this
    /// range `shaCryptMaxBlocks` is the tighter bound.
    public var shaCryptRounds: ClosedRange<Int> = 1_000...1_000_000

    /// Largest sha-crypt work, in SHA-2 compression blocks hashed per check (default 1_600_000).
    /// Every round hashes the password about twice, so the work grows with the rounds *and* the
    /// password's length, which the caller chooses: 1_000_000 rounds cost 0.4 s with an 8-byte
    /// password and 3 s with a 511-byte one. A hash is admitted only if a password of
    /// `shaCryptAdmittedPasswordBytes` (64) can be checked within this bound (passlib's defaults,
    /// 656_000 rounds for sha512-crypt and 535_000 for sha256-crypt, can); a longer password
    /// against it is refused before any hashing, as a password the hash cannot check.
    public var shaCryptMaxBlocks: Int = 1_600_000

    /// phpass cost (WordPress `$P$`, phpBB `$H$`), the base-2 logarithm of the MD5 iterations
    /// (default 7...20; phpass itself accepts 7...30). WordPress stores 13 (`$P$B`), phpBB 11
    /// (`$H$9`), passlib 19. Each iteration hashes the password again, so the work grows with its
    /// length too: a hash at the top cost is checked for passwords up to 103 bytes (the work of a
    /// 64-byte one), and each step down doubles the length allowed; a longer password is refused
    /// before any hashing.
    public var phpassCost: ClosedRange<Int> = 7...20

    /// Drupal 7 cost (`$S$`), the base-2 logarithm of the SHA-512 iterations (default 7...19;
    /// Drupal accepts 7...30). Drupal 7 stores 15 (`$S$D`), later versions 16 (`$S$E`). A hash at
    /// the top cost is checked for passwords up to 175 bytes, each step down doubling that, and
    /// never beyond Drupal's own 512.
    public var drupalCost: ClosedRange<Int> = 7...19

    /// The password length every admitted sha-crypt hash can be checked for.
    public static let shaCryptAdmittedPasswordBytes = 64

    public init() {}

    /// The limits documented on each property.
    public static let `default` = PasswordHashLimits()
}

extension PasswordHashLimits {
    /// The bytes of memory a yescrypt check passes over, as libxcrypt's yescrypt computes it:
    /// classic scrypt (flavor 0) fills and reads its memory once per lane; WORM (flavor 1) fills
    /// it once per lane and reads it once more (t = 0), 1.5 times (t = 1) or `t` times; the RW
    /// flavors (2 and up, what distributions write) split the memory among the lanes, fill it once
    /// and read a third of it (t = 0), two thirds (t = 1) or `t` − 1 times.
    public static func yescryptWorkBytes(memoryBytes: Int, flavor: Int, p: Int, t: Int) -> Int {
        switch flavor {
        case 0: return memoryBytes * 2 * p
        case 1: return memoryBytes * p * (2 + (t == 0 ? 2 : t == 1 ? 3 : 2 * t)) / 2
        default: return memoryBytes * (3 + (t == 0 ? 1 : t == 1 ? 2 : 3 * (t - 1))) / 3
        }
    }

    /// The SHA-2 compression blocks a sha-crypt check hashes for a password of `passwordBytes`
    /// (`sha512` or sha256-crypt), following the rounds of the specification: each round hashes the
    /// previous digest and the password, the salt in two rounds of three and the password again in
    /// six of seven. The set-up before the rounds is small beside them and left out.
    public static func shaCryptBlocks(sha512: Bool, rounds: Int, saltBytes: Int, passwordBytes: Int) -> Int {
        let (digest, block, padding) = sha512 ? (64, 128, 17) : (32, 64, 9)
        func blocks(round: Int) -> Int {
            let odd = round & 1 == 1
            var bytes = (odd ? passwordBytes : digest) + (odd ? digest : passwordBytes)
            if round % 3 != 0 { bytes += saltBytes }
            if round % 7 != 0 { bytes += passwordBytes }
            return (bytes + padding + block - 1) / block
        }
        // The pattern repeats every 42 rounds (2·3·7).
        let cycle = (0..<42).reduce(0) { $0 + blocks(round: $1) }
        return rounds / 42 * cycle + (0..<rounds % 42).reduce(0) { $0 + blocks(round: $1) }
    }

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
