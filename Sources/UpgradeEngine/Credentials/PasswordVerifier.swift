import Glibc

/// Checks passwords against stored hashes in every format `PasswordHashFormat` lists.
///
/// Work happens in a fixed order, so a hostile or damaged hash costs almost nothing:
/// 1. the hash is parsed strictly and every cost parameter is compared with `limits`;
///    a failure throws before any key derivation is started;
/// 2. the password's length is checked against `limits` (and the format's own constraints);
/// 3. only then is the hash recomputed, and compared with the stored one in constant time.
/// How little a refusal costs is measured in `Benchmarks/`, not asserted by tests.
///
/// Holds only immutable values and calls C functions that keep their state per call, so one
/// verifier may be used from any number of threads at once.
public struct PasswordVerifier: Sendable {
    public let limits: PasswordHashLimits
    /// Told the CPU seconds the calling thread spent on each key derivation (a real check or a
    /// dummy), for metrics: what a password check costs where it runs, caches and all.
    public var onHashed: (@Sendable (_ cpuSeconds: Double) -> Void)?
    /// Where the project-wide parameters of Firebase scrypt and keyed HMAC hashes are found
    /// (`HashParameterSet`): the server's sealed sets (`StoredHashParameters`), or a parameters
    /// file's. Without one such hashes parse, but are checked as `.parametersUnavailable`.
    public var parameterSets: (any HashParameterSource)?

    /// What `verifyDummy` recomputes: argon2id with the hasher's parameters, random salt and output.
    let dummy: PasswordHash

    /// - Parameters:
    ///   - limits: bounds on stored hashes and passwords.
    ///   - dummyParameters: the parameters `verifyDummy` spends, normally the ones the service's
    ///     `PasswordHasher` uses, so that an unknown user costs what a known, upgraded user costs.
    public init(limits: PasswordHashLimits = .default, dummyParameters: PasswordHasher.Parameters = .default) {
        self.limits = limits
        // Random salt and output: no password is known to match, and none needs to, because the
        // result is discarded. Built directly, not parsed, so it does not depend on `limits`.
        self.dummy = .argon2(
            PasswordHash.Argon2(
                variant: .id,
                version: 0x13,
                memoryKiB: dummyParameters.memoryKiB,
                iterations: dummyParameters.iterations,
                parallelism: dummyParameters.parallelism,
                salt: SecureRandom.bytes(max(dummyParameters.saltLength, 8)),
                hash: SecureRandom.bytes(max(dummyParameters.hashLength, 4))
            )
        )
    }

    /// The stored hash's format and cost, after the same strict parsing and bounds checks that
    /// `verify` applies. Nothing is computed. A hash that names a parameter set has it resolved and
    /// bounded as well when `parameterSets` is set (a set that is missing throws); without it, the
    /// hash alone is checked.
    public func inspect(_ encodedHash: String) throws(PasswordHashError) -> PasswordHashInspection {
        let hash = try PasswordHash(parsing: encodedHash, limits: limits)
        guard parameterSets != nil, hash.parameterSetReference != nil else { return hash.inspection }
        let set = try parameterSet(for: hash)
        if case .firebaseScrypt(let firebase) = hash { _ = try firebase.scrypt(set, limits: limits) }
        if case .keyedHMAC(let hmac) = hash, set.kind != .hmac {
            throw PasswordHash.wrongKind(hmac.setID, expected: .hmac)
        }
        return hash.inspection(with: set)
    }

    /// The parameter set `hash` names, of the kind it needs; nil for a hash that names none.
    private func parameterSet(for hash: PasswordHash) throws(PasswordHashError) -> HashParameterSet {
        guard let (id, kind) = hash.parameterSetReference else {
            preconditionFailure("only hashes that name a parameter set are resolved")
        }
        guard let parameterSets else {
            throw PasswordHashError(
                .parametersUnavailable,
                "the hash needs a \(kind.rawValue) parameter set and this check has none "
                    + "(stored sets open with the server's secret key: set UPGRADE_SECRET_KEY_FILE)"
            )
        }
        let set = try parameterSets.hashParameterSet(id: id, kind: kind)
        guard set.kind == kind else { throw PasswordHash.wrongKind(id, expected: kind) }
        return set
    }

    /// Whether `password` matches `encodedHash`.
    ///
    /// Returns `false` for a wrong password. Throws when the answer cannot be trusted either way:
    /// an unknown, malformed, unsupported or too costly hash, or a password that is too long or that
    /// the format cannot represent (`PasswordHashError.Code`). The password is taken as its exact
    /// UTF-8 bytes, without normalisation, as the systems that wrote these hashes took it.
    public func verify(password: String, encodedHash: String) throws(PasswordHashError) -> Bool {
        // Parse and bound the stored hash before anything else: no key derivation runs unless this succeeds.
        let hash = try PasswordHash(parsing: encodedHash, limits: limits)
        return try verify(password: password, against: hash)
    }

    /// Spends what verifying `password` against a current hash would, and discards the result.
    ///
    /// Call it when the username is unknown (or the account has no password), where `verify` would
    /// otherwise have been called, so that response time does not reveal which accounts exist. The
    /// dummy is argon2id with `dummyParameters`, the cost of every account hashed by this service's
    /// `PasswordHasher`. Accounts still holding an imported legacy hash cost what their own format
    /// costs, so the service answers every refusal at a floor above the costliest admitted check
    /// (`PasswordHashLimits.failureFloor`, `ServiceFailure.notBefore`), which hides the difference.
    /// A password `verify` would refuse before hashing (too long) is refused here just as early.
    public func verifyDummy(password: String) {
        _ = try? verify(password: password, against: dummy)
    }

    private func verify(password: String, against hash: PasswordHash) throws(PasswordHashError) -> Bool {
        // The parameter set is resolved (and its cost bounded) before the password is looked at.
        let set = hash.parameterSetReference == nil ? nil : try parameterSet(for: hash)
        var bytes = try limits.passwordBytes(password)
        defer { PasswordKDF.wipe(&bytes) }
        guard let onHashed else { return try hash.verify(password: bytes, set: set, limits: limits) }
        let started = Self.threadCPUSeconds()
        defer { onHashed(Self.threadCPUSeconds() - started) }
        return try hash.verify(password: bytes, set: set, limits: limits)
    }

    /// Hashes `password` with `hasher` (a rehash, a changed password), reporting its CPU time to
    /// `onHashed` like a check, so the metric counts every key derivation the server runs.
    public func hash(password: String, with hasher: PasswordHasher) throws(PasswordHashError) -> String {
        guard let onHashed else { return try hasher.hash(password: password) }
        let started = Self.threadCPUSeconds()
        defer { onHashed(Self.threadCPUSeconds() - started) }
        return try hasher.hash(password: password)
    }

    /// The calling thread's CPU time so far.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
