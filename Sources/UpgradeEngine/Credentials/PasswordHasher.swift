/// Creates new password hashes: argon2id PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`)
/// that `PasswordVerifier`, libargon2, argon2-cffi, passlib and Django all verify.
///
/// argon2id because it is RFC 9106's and OWASP's first choice: memory-hard against GPUs and, unlike
/// argon2d, free of password-dependent memory access. Every hash gets a fresh random salt from
/// `SecureRandom`. The type holds only its parameters, so one value may be shared by any number of
/// concurrent tasks.
public struct PasswordHasher: Sendable {
    /// argon2id cost and sizes.
    public struct Parameters: Sendable, Hashable {
        /// Memory in KiB. The default, 19_456 (19 MiB), is OWASP's recommended minimum for argon2id.
        public var memoryKiB: Int
        /// Passes over the memory. The default, 2, pairs with 19 MiB in OWASP's recommendation.
        public var iterations: Int
        /// Lanes. The default, 1: lanes are computed on the calling thread, so more only adds
        /// bookkeeping; throughput comes from verifying many passwords at once.
        public var parallelism: Int
        /// Salt bytes (default 16, RFC 9106's recommendation; 16...64 accepted).
        public var saltLength: Int
        /// Output bytes (default 32; 16...64 accepted).
        public var hashLength: Int

        public init(
            memoryKiB: Int = 19_456,
            iterations: Int = 2,
            parallelism: Int = 1,
            saltLength: Int = 16,
            hashLength: Int = 32
        ) {
            self.memoryKiB = memoryKiB
            self.iterations = iterations
            self.parallelism = parallelism
            self.saltLength = saltLength
            self.hashLength = hashLength
        }

        /// m = 19 MiB, t = 2, p = 1, 16-byte salt, 32-byte hash: OWASP's argon2id baseline, which
        /// takes a few tens of milliseconds on one core.
        public static let `default` = Parameters()
    }

    public let parameters: Parameters
    private let limits: PasswordHashLimits

    /// A hasher with `Parameters.default`.
    public init() {
        self.parameters = .default
        self.limits = .default
    }

    /// A hasher with custom parameters, refused with `.parameterOutOfBounds` if a verifier using
    /// `limits` would refuse the hashes it makes.
    public init(parameters: Parameters, limits: PasswordHashLimits = .default) throws(PasswordHashError) {
        try PasswordHash.checkArgon2Bounds(
            scheme: "$argon2id$",
            memoryKiB: parameters.memoryKiB,
            iterations: parameters.iterations,
            parallelism: parameters.parallelism,
            limits: limits
        )
        guard (16...64).contains(parameters.saltLength), (16...64).contains(parameters.hashLength) else {
            throw PasswordHashError(
                .parameterOutOfBounds,
                "argon2id salt and hash lengths must be 16...64 bytes; got \(parameters.saltLength) and "
                    + "\(parameters.hashLength)"
            )
        }
        self.parameters = parameters
        self.limits = limits
    }

    /// A new PHC string for `password` (its exact UTF-8 bytes, at most `maxPasswordBytes`).
    public func hash(password: String) throws(PasswordHashError) -> String {
        try hash(password: password, salt: SecureRandom.bytes(parameters.saltLength))
    }

    /// The hash with a given salt: only for tests that compare with another implementation.
    func hash(password: String, salt: [UInt8]) throws(PasswordHashError) -> String {
        var passwordBytes = try limits.passwordBytes(password)
        defer { PasswordKDF.wipe(&passwordBytes) }
        let output = try PasswordKDF.argon2(
            .id,
            version: 0x13,
            password: passwordBytes,
            salt: salt,
            memoryKiB: parameters.memoryKiB,
            iterations: parameters.iterations,
            parallelism: parameters.parallelism,
            outputLength: parameters.hashLength
        )
        return PasswordHash.Argon2(
            variant: .id,
            version: 0x13,
            memoryKiB: parameters.memoryKiB,
            iterations: parameters.iterations,
            parallelism: parameters.parallelism,
            salt: salt,
            hash: output
        ).encoded
    }

    /// Whether `encodedHash` is what this hasher writes now: argon2id, version 1.3, with these
    /// parameters. Anything else (a legacy format, older parameters, a hash that does not parse)
    /// is replaced after the password's next successful check.
    public func isCurrent(_ encodedHash: String) -> Bool {
        guard case .argon2(let hash) = try? PasswordHash(parsing: encodedHash, limits: limits) else { return false }
        // Django's `argon2$…` is rewritten as the plain PHC string this hasher writes.
        return hash.prefix.isEmpty && hash.variant == .id && hash.version == 0x13
            && hash.memoryKiB == parameters.memoryKiB
            && hash.iterations == parameters.iterations && hash.parallelism == parameters.parallelism
            && hash.salt.count == parameters.saltLength && hash.hash.count == parameters.hashLength
    }
}
