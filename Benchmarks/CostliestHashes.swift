import UpgradeEngine

/// For each stored format, the hash `PasswordHashLimits` admits that costs the most to check, with
/// the password that makes the check cost the most (the longest one a format takes, where its work
/// grows with the password). Built from the limits, so the benchmarks follow them when they change.
/// Salts and digests come from hashes made by independent implementations
/// (Tests/Fixtures/passwords), with only the cost parameters changed: no password matches them.
struct CostliestHash: Sendable {
    let name: String
    let hash: String
    let password: String

    /// A wrong password of `count` ASCII bytes.
    static func password(bytes count: Int) -> String {
        String(repeating: "wrong-password-", count: count / 15 + 1).prefix(count).description
    }

    static let shortPassword = "wrong-password"

    static func all(_ limits: PasswordHashLimits) -> [CostliestHash] {
        let longest = password(bytes: limits.maxPasswordBytes)
        // libxcrypt takes at most 511 bytes (CRYPT_MAX_PASSPHRASE_SIZE − 1).
        let longestCrypt = password(bytes: min(limits.maxPasswordBytes, 511))
        var hashes = [
            CostliestHash(
                name: "bcrypt cost \(limits.bcryptCost.upperBound)",
                hash: bcrypt(cost: limits.bcryptCost.upperBound),
                password: shortPassword
            )
        ]
        for variant in ["argon2id", "argon2i"] {
            for (memory, passes) in argon2Extremes(limits) {
                hashes.append(
                    CostliestHash(
                        name: "\(variant) m=\(memory) KiB, t=\(passes)",
                        hash: argon2(variant, memoryKiB: memory, passes: passes),
                        password: shortPassword
                    )
                )
            }
        }
        for (logN, r, p) in scryptExtremes(limits) {
            hashes.append(
                CostliestHash(
                    name: "scrypt N=2^\(logN), r=\(r), p=\(p)",
                    hash:
                        "$scrypt$ln=\(logN),r=\(r),p=\(p)$X6vVGiPEmFOK0RojxNjbmw$YRNewKccoEgo3shI7uPz8bKjhdsMKlO4jFwKIoj8C3g",
                    password: shortPassword
                )
            )
        }
        let iterations = limits.pbkdf2Iterations.upperBound
        let iterations512 = limits.pbkdf2SHA512Iterations.upperBound
        hashes += [
            CostliestHash(
                name: "PBKDF2-SHA1 \(iterations)",
                hash: "pbkdf2_sha1$\(iterations)$QZGLEjgmuKge$NkZXnsLaaolZUt+81rE/ijJ7Nwg=",
                password: shortPassword
            ),
            CostliestHash(
                name: "PBKDF2-SHA256 \(iterations)",
                hash: "pbkdf2_sha256$\(iterations)$b9MbjyN8pQZ2$5YEobhtTE5FsyUbax4iIaxvxczCiyP+34JC+sch61yE=",
                password: shortPassword
            ),
            CostliestHash(
                name: "PBKDF2-SHA512 \(iterations512)",
                hash: "$pbkdf2-sha512$\(iterations512)$JuT83/vfm3PO2VvL2ZsTgg$"
                    + "9eYIZyxnHWDcGlJ59TCKKzrRuRqPtVpxbf33V583q/gKSNm7selRUN511d8qRBjeGMZWUTPDUnvIQdDtpLc7vQ",
                password: shortPassword
            ),
        ]
        for (sha512, prefix, body) in [
            (
                true, "$6$",
                "$RD9yc3A0hvfqQQuL$lgJmmtildDKevwpsimtMxQU0zgdGc3ed8PNV56cB830N4GJb5egvD3x1nmboWfoJtFpgY2gCepdAUQ2Dl3YAu/"
            ),
            (false, "$5$", "$0qqnNMMRyKLU9k1H$3Mx4WvSSYBbEzUGv3p5/qn8TYkIk8UKCYJRJTHVtQx5"),
        ] {
            let (rounds, passwordBytes) = shaCryptExtreme(limits, sha512: sha512)
            hashes.append(
                CostliestHash(
                    name: "\(sha512 ? "sha512" : "sha256")-crypt \(rounds) rounds, \(passwordBytes)-byte password",
                    hash: "\(prefix)rounds=\(rounds)\(body)",
                    password: password(bytes: passwordBytes)
                )
            )
        }
        hashes += [
            CostliestHash(
                name: "md5-crypt, \(longestCrypt.utf8.count)-byte password",
                hash: "$1$4JfxXPRh$m8k6KWgWi.RnvjWvwUE370",
                password: longestCrypt
            )
        ]
        for (flavor, logN, r, p, t) in yescryptExtremes(limits) {
            hashes.append(
                CostliestHash(
                    name: "yescrypt \(flavorName(flavor)) N=2^\(logN), r=\(r), p=\(p), t=\(t)",
                    hash: "$y$" + yescryptParameters(flavor: flavor, logN: logN, r: r, p: p, t: t)
                        + "$GU995YHvRQ6Qjp1095F/B.$e/pdbqifvJgHwtx0scKXOEPDtmt1NB8gD8Y684fUlz9",
                    password: shortPassword
                )
            )
        }
        // At the top cost, the longest password it is checked for: the work of a 64-byte one.
        let costCharacters = Array("./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        let phpassCost = min(limits.phpassCost.upperBound, 30)
        let drupalCost = min(limits.drupalCost.upperBound, 30)
        hashes += [
            CostliestHash(
                name: "phpass cost \(phpassCost), 103-byte password",
                hash: "$P$\(costCharacters[phpassCost])t4UiB4G0H4GJ3P5V8AcDSaKMG.LrG0",
                password: password(bytes: 103)
            ),
            CostliestHash(
                name: "Drupal 7 cost \(drupalCost), 175-byte password",
                hash: "$S$\(costCharacters[drupalCost])H6Az79vdu3TDuYnIMNhvOZauIMVgdDnlo4ebLjuW9F3FSJWM6pu",
                password: password(bytes: 175)
            ),
        ]
        hashes.append(
            CostliestHash(
                name: "LDAP {SSHA512}, \(longest.utf8.count)-byte password",
                hash:
                    "{SSHA512}1mniCPGS15rmJzFSu28NN3TK2UqFxbIX935DdehxH/8wv3wG4/ZqnMq8z4C2wNXvaWqbWil6ywk6h/F7Vvlmjj+f6TBFyWi4awz+pRuJYz8=",
                password: longest
            )
        )
        return hashes
    }

    /// The most rounds a sha-crypt hash with a 16-character salt may have (a 64-byte password must fit
    /// the block bound), and the longest password those rounds can check.
    static func shaCryptExtreme(_ limits: PasswordHashLimits, sha512: Bool) -> (rounds: Int, passwordBytes: Int) {
        func blocks(_ rounds: Int, _ passwordBytes: Int) -> Int {
            PasswordHashLimits.shaCryptBlocks(
                sha512: sha512,
                rounds: rounds,
                saltBytes: 16,
                passwordBytes: passwordBytes
            )
        }
        let admitted = PasswordHashLimits.shaCryptAdmittedPasswordBytes
        var rounds = limits.shaCryptRounds.lowerBound
        var beyond = limits.shaCryptRounds.upperBound + 1
        while beyond - rounds > 1 {
            let middle = (rounds + beyond) / 2
            if blocks(middle, admitted) <= limits.shaCryptMaxBlocks { rounds = middle } else { beyond = middle }
        }
        var passwordBytes = admitted
        while passwordBytes < 511 && blocks(rounds, passwordBytes + 1) <= limits.shaCryptMaxBlocks {
            passwordBytes += 1
        }
        return (rounds, passwordBytes)
    }

    static func bcrypt(cost: Int) -> String {
        let digits = cost < 10 ? "0\(cost)" : "\(cost)"
        return "$2b$\(digits)$BijTQqc208/khZ0oPV5xKOL.ZsLZITC3nFpegnO1AV049ap0LYpue"
    }

    static func argon2(_ variant: String, memoryKiB: Int, passes: Int) -> String {
        "$\(variant)$v=19$m=\(memoryKiB),t=\(passes),p=1$eLCsCYFdT9mTmT8fPUbVog$2qVcYcAMO37ovgi2geUwu8kBlQcyZXurEZLe8IoM0lE"
    }

    /// The split of memory and passes with the most work (the most memory among equals), and the
    /// most passes with the memory the work bound leaves them: time per KiB differs a little.
    static func argon2Extremes(_ limits: PasswordHashLimits) -> [(Int, Int)] {
        let splits = limits.argon2Iterations.map { passes in
            (min(limits.argon2MaxMemoryKiB, limits.argon2MaxWorkKiB / passes) / 8 * 8, passes)
        }
        let most = splits.max { ($0.0 * $0.1, $0.0) < ($1.0 * $1.1, $1.0) }
        return [most, splits.last].compactMap { $0 }
    }

    /// The largest N with p = 1, and the most lanes with the memory the work bound leaves them.
    static func scryptExtremes(_ limits: PasswordHashLimits) -> [(Int, Int, Int)] {
        func largestLogN(r: Int, memory: Int) -> Int {
            var logN = 1
            while logN < limits.scryptMaxLogN && 128 * r << (logN + 1) <= memory { logN += 1 }
            return logN
        }
        let memory = min(limits.scryptMaxMemoryBytes, limits.scryptMaxWorkBytes)
        let p = limits.scryptMaxParallelism
        return [
            (largestLogN(r: 8, memory: memory), 8, 1),
            (largestLogN(r: 8, memory: min(memory, limits.scryptMaxWorkBytes / p)), 8, p),
        ]
    }

    /// yescrypt's three modes at the largest memory and time each may use within the work bound:
    /// the RW flavor distributions write ($y$j…), WORM, and classic scrypt (flavor 0, t = 0).
    static func yescryptExtremes(_ limits: PasswordHashLimits) -> [(Int, Int, Int, Int, Int)] {
        var extremes: [(Int, Int, Int, Int, Int)] = []
        for flavor in [47, 1, 0] {
            var best: (Int, Int, Int, Int, Int)?
            var bestWork = 0
            var bestMemory = 0
            for t in 0...(flavor == 0 ? 0 : limits.yescryptMaxTime) {
                for p in 1...limits.yescryptMaxParallelism {
                    for logN in 1...30 {
                        let r = 32
                        let memory = 128 * r << logN
                        guard memory <= limits.yescryptMaxMemoryBytes else { break }
                        let work = PasswordHashLimits.yescryptWorkBytes(
                            memoryBytes: memory,
                            flavor: flavor,
                            p: p,
                            t: t
                        )
                        guard work <= limits.yescryptMaxWorkBytes else { break }
                        // Among equal work the most memory, whose misses cost the most per byte.
                        if (work, memory) > (bestWork, bestMemory) {
                            (best, bestWork, bestMemory) = ((flavor, logN, r, p, t), work, memory)
                        }
                    }
                }
            }
            if let best { extremes.append(best) }
        }
        return extremes
    }

    static func flavorName(_ flavor: Int) -> String {
        switch flavor {
        case 0: "classic scrypt"
        case 1: "WORM"
        default: "RW"
        }
    }

    /// yescrypt's parameter field: flavor, log2(N) and r, then the optional bit set and p, t (as
    /// libxcrypt's `encode64_uint32` writes them).
    static func yescryptParameters(flavor: Int, logN: Int, r: Int, p: Int, t: Int) -> String {
        var text = encode(flavor, minimum: 0) + encode(logN, minimum: 1) + encode(r, minimum: 1)
        let have = (p != 1 ? 1 : 0) | (t != 0 ? 2 : 0)
        if have != 0 {
            text += encode(have, minimum: 1)
            if p != 1 { text += encode(p, minimum: 2) }
            if t != 0 { text += encode(t, minimum: 1) }
        }
        return text
    }

    private static let alphabet = Array("./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    private static func encode(_ value: Int, minimum: Int) -> String {
        var rest = value - minimum
        var (start, end, count, bits) = (0, 47, 1, 0)
        while rest >= (end + 1 - start) << bits {
            rest -= (end + 1 - start) << bits
            start = end + 1
            end = start + (62 - end) / 2
            count += 1
            bits += 6
        }
        var text = String(alphabet[start + (rest >> bits)])
        while count > 1 {
            bits -= 6
            text.append(alphabet[(rest >> bits) & 0x3f])
            count -= 1
        }
        return text
    }
}
