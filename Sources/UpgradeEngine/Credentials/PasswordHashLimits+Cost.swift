extension PasswordHashLimits {
    /// CPU seconds per unit of each format's work on the build machine (2 vCPUs, AMD EPYC under KVM,
    /// shared with other work), from `Benchmarks password-costs`, which prints these estimates beside
    /// the measured cost of each format's costliest admitted hash (Benchmarks/README.md).
    enum ReferenceCost {
        /// One of bcrypt's 2^cost expensive key schedules.
        static let bcryptRound = 51.5e-6
        /// One KiB of argon2 memory filled in one pass (argon2i, a little slower than argon2id).
        static let argon2KiBPass = 1.17e-6
        /// One byte of 128·N·r·p (OpenSSL's scrypt).
        static let scryptByte = 3.1e-9
        /// One byte of yescrypt work (`yescryptWorkBytes`) in its Salsa20 modes (classic scrypt and
        /// WORM); the RW flavors distributions write cost about a fifth less.
        static let yescryptByte = 1.05e-9
        /// One PBKDF2 iteration (two compressions) with HMAC-SHA1 or SHA256, and with HMAC-SHA512.
        static let pbkdf2Iteration = 0.235e-6
        static let pbkdf2SHA512Iteration = 0.58e-6
        /// One SHA-2 compression block of sha-crypt (libxcrypt's own SHA-2; short rounds cost a
        /// little more per block than long ones, and this is the short rounds' figure).
        static let shaCryptBlock = 0.30e-6
        /// One MD5 and one SHA-512 compression block of phpass and Drupal 7 (OpenSSL, one digest
        /// context reused), with the digest calls' overhead, which is most of a one-block iteration.
        static let phpassMD5Block = 0.115e-6
        static let drupalSHA512Block = 0.20e-6
    }

    /// What one check against the costliest hash these limits admit costs, per format family, in CPU
    /// time of one core of the build machine: the format's largest admitted work times its measured
    /// cost per unit (`ReferenceCost`). md5-crypt (fixed cost) and the LDAP salted digests (one hash)
    /// cost a few milliseconds at most and are left out.
    public var costliestChecks: [(format: String, cost: Duration)] {
        let shaCrypt = Double(shaCryptMaxBlocks) * ReferenceCost.shaCryptBlock
        let estimates: [(String, Double)] = [
            ("bcrypt", Double(1 << min(bcryptCost.upperBound, 40)) * ReferenceCost.bcryptRound),
            (
                "argon2id / argon2i",
                Double(min(argon2MaxWorkKiB, argon2MaxMemoryKiB * argon2Iterations.upperBound))
                    * ReferenceCost.argon2KiBPass
            ),
            (
                "scrypt",
                Double(min(scryptMaxWorkBytes, scryptMaxMemoryBytes * scryptMaxParallelism)) * ReferenceCost.scryptByte
            ),
            ("yescrypt", Double(yescryptMaxWorkBytes) * ReferenceCost.yescryptByte),
            ("PBKDF2-SHA1 / SHA256", Double(pbkdf2Iterations.upperBound) * ReferenceCost.pbkdf2Iteration),
            ("PBKDF2-SHA512", Double(pbkdf2SHA512Iterations.upperBound) * ReferenceCost.pbkdf2SHA512Iteration),
            ("sha512-crypt / sha256-crypt", shaCrypt),
            ("phpass", phpassWork(.md5, phpassCost) * ReferenceCost.phpassMD5Block),
            ("Drupal 7", phpassWork(.drupalSHA512, drupalCost) * ReferenceCost.drupalSHA512Block),
        ]
        return estimates.map { ($0.0, .milliseconds(Int64(($0.1 * 1000).rounded(.up)))) }
    }

    /// Compression blocks of the costliest admitted phpass or Drupal check: the top cost's
    /// iterations over a password of the admitted length (longer ones are refused at lower costs).
    private func phpassWork(_ variant: PasswordHash.Phpass.Variant, _ cost: ClosedRange<Int>) -> Double {
        Double(1 << min(cost.upperBound, 30))
            * Double(PasswordHash.phpassBlocks(variant, passwordBytes: PasswordHash.phpassAdmittedPasswordBytes))
    }

    /// The costliest of `costliestChecks`: about 0.48 s with the defaults.
    public var costliestCheck: Duration {
        costliestChecks.map(\.cost).max() ?? .zero
    }

    /// How soon a failed credential check may be answered at the earliest, by default
    /// (`UpgradeServiceConfiguration.failureFloor`): the costliest admitted check plus half, for a
    /// machine whose cores are shared (the check's wall time grows with the load) and the request's
    /// own reads and writes, rounded up to 10 ms: 720 ms with the defaults. A refusal answered at
    /// this floor looks the same whatever the account's hash; one whose check took longer is counted
    /// in `credential_failure_floor_overruns_total`.
    public var failureFloor: Duration {
        let milliseconds =
            Double(costliestCheck.components.seconds) * 1000
            + Double(costliestCheck.components.attoseconds) / 1e15
        return .milliseconds(Int64((milliseconds * 1.5 / 10).rounded(.up)) * 10)
    }
}
