// libFuzzer entry point for the stored-hash parser (`PasswordHash(parsing:limits:)`): what reads a
// hash from an import file, a provisioning call or the database before any key derivation runs,
// and decides what a check may cost. Compiled with the credential sources and the C libraries they
// call (see ../run.sh); parsing itself computes nothing. Besides "no crash, no memory error", it
// checks, under the default limits and under a tight set:
// 1. A hash is accepted only if it is at most `maxEncodedHashBytes` of printable ASCII and starts
//    with a prefix of `PasswordHash.schemes`, and its inspection names that prefix.
// 2. Every cost parameter of an accepted hash is within the limits (argon2 memory, passes, lanes
//    and work; scrypt N, r, p, memory and work; PBKDF2 iterations; phpass and Drupal cost; bcrypt
//    cost): the bound a stranger's guess cannot exceed.
// 3. Parsing is deterministic: the same text gives the same inspection, or the same error.
// 4. An argon2 hash read back from its own encoding has the same parameters.

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// Limits far below the defaults, so that the fuzzer reaches each bound's refusal quickly.
let tight: PasswordHashLimits = {
    var limits = PasswordHashLimits()
    limits.maxEncodedHashBytes = 160
    limits.bcryptCost = 4...6
    limits.argon2MaxMemoryKiB = 1024
    limits.argon2Iterations = 1...3
    limits.argon2MaxWorkKiB = 2048
    limits.argon2Parallelism = 1...2
    limits.scryptMaxLogN = 10
    limits.scryptMaxMemoryBytes = 1 << 20
    limits.scryptMaxParallelism = 2
    limits.scryptMaxWorkBytes = 1 << 20
    return limits
}()

/// The decimal after `$2b$` and the like, as bcrypt stores its cost.
func bcryptCost(_ encoded: String) -> Int? {
    let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
    guard parts.count >= 3 else { return nil }
    return Int(parts[2])
}

func checkBounds(_ hash: PasswordHash, _ limits: PasswordHashLimits, _ text: String) {
    switch hash {
    case .argon2(let a):
        require(a.memoryKiB <= limits.argon2MaxMemoryKiB, "argon2 m=\(a.memoryKiB) admitted: \(text)")
        require(limits.argon2Iterations.contains(a.iterations), "argon2 t=\(a.iterations) admitted: \(text)")
        require(limits.argon2Parallelism.contains(a.parallelism), "argon2 p=\(a.parallelism) admitted: \(text)")
        require(a.memoryKiB >= 8 * a.parallelism, "argon2 m < 8p admitted: \(text)")
        let work = a.memoryKiB.multipliedReportingOverflow(by: a.iterations)
        require(!work.overflow && work.partialValue <= limits.argon2MaxWorkKiB, "argon2 work admitted: \(text)")
        // 4. Its own encoding reads back to the same parameters.
        do {
            guard case .argon2(let again) = try PasswordHash(parsing: a.encoded, limits: limits) else {
                require(false, "an argon2 encoding read back as another format: \(a.encoded)")
                return
            }
            require(
                again.variant == a.variant && again.version == a.version && again.memoryKiB == a.memoryKiB
                    && again.iterations == a.iterations && again.parallelism == a.parallelism
                    && again.salt == a.salt && again.hash == a.hash,
                "an argon2 encoding reads back otherwise: \(text) -> \(a.encoded)"
            )
        } catch {
            require(false, "an argon2 encoding is refused: \(text) -> \(a.encoded): \(error)")
        }
    case .scrypt(let s):
        require(s.logN <= limits.scryptMaxLogN, "scrypt log2 N=\(s.logN) admitted: \(text)")
        require(s.p <= limits.scryptMaxParallelism && s.p >= 1, "scrypt p=\(s.p) admitted: \(text)")
        let (memory, overflow) = (128 * s.r).multipliedReportingOverflow(by: 1 << s.logN)
        require(!overflow && memory <= limits.scryptMaxMemoryBytes, "scrypt memory admitted: \(text)")
        let work = memory.multipliedReportingOverflow(by: s.p)
        require(!work.overflow && work.partialValue <= limits.scryptMaxWorkBytes, "scrypt work admitted: \(text)")
    case .pbkdf2(let p):
        let range = p.digest == .sha512 ? limits.pbkdf2SHA512Iterations : limits.pbkdf2Iterations
        require(range.contains(p.iterations), "PBKDF2 \(p.iterations) iterations admitted: \(text)")
    case .phpass(let p):
        let range = p.variant == .drupalSHA512 ? limits.drupalCost : limits.phpassCost
        require(range.contains(p.cost), "phpass cost \(p.cost) admitted: \(text)")
    case .libxcrypt(let x), .bcryptSHA256(let x):
        if x.format == .bcrypt {
            let cost = bcryptCost(x.encoded)
            require(
                cost.map(limits.bcryptCost.contains) == true,
                "bcrypt cost \(String(describing: cost)) admitted: \(text)"
            )
        }
    case .saltedSHA, .firebaseScrypt, .keyedHMAC:
        break
    }
}

func check(_ text: String, _ limits: PasswordHashLimits) {
    let first = Result { () throws(PasswordHashError) in try PasswordHash(parsing: text, limits: limits) }
    let second = Result { () throws(PasswordHashError) in try PasswordHash(parsing: text, limits: limits) }
    switch (first, second) {
    case (.success(let hash), .success(let again)):
        let inspection = hash.inspection
        require(inspection == again.inspection, "two readings differ: \(text)")
        let bytes = Array(text.utf8)
        require(bytes.count <= limits.maxEncodedHashBytes, "\(bytes.count) bytes admitted")
        require(bytes.allSatisfy { (0x21...0x7e).contains($0) }, "a byte outside printable ASCII admitted: \(text)")
        let scheme = PasswordHash.scheme(of: Array(bytes.prefix(PasswordHash.longestPrefix)))
        require(scheme != nil, "admitted without a known prefix: \(text)")
        require(
            text.hasPrefix(inspection.scheme) || inspection.scheme.hasPrefix(scheme?.0 ?? "\u{0}"),
            "the inspection names another scheme (\(inspection.scheme)): \(text)"
        )
        checkBounds(hash, limits, text)
    case (.failure(let error), .failure(let again)):
        require(error.message == again.message, "two refusals differ: \(text)")
    default:
        require(false, "accepted once and refused once: \(text)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Hashes arrive as text (CSV, JSON, a database column): invalid UTF-8 is repaired before here.
    let text = String(decoding: bytes, as: UTF8.self)
    check(text, .default)
    check(text, tight)
    return 0
}
