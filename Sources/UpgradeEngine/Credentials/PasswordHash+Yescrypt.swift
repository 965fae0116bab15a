extension PasswordHash {
    /// `$y$` + parameters + `$` + salt + `$` + 43 hash characters.
    ///
    /// The parameter field is yescrypt's variable-length encoding: flavor, log2(N) and r always, then
    /// optionally a bit set saying which of p, t, g and NROM follow. It is decoded here exactly as
    /// libxcrypt decodes it, so the bounds are checked on the values the library would use.
    static func parseYescrypt(_ bytes: [UInt8], limits: PasswordHashLimits) throws(PasswordHashError) -> PasswordHash {
        let scheme = "$y$"
        let fields = fields(bytes, after: scheme)
        guard fields.count == 3 else {
            throw .malformed(scheme, "expected parameters$salt$hash")
        }
        var reader = YescryptParameterReader(fields[0])
        guard let flavor = reader.next(minimum: 0),
            let logN = reader.next(minimum: 1),
            let r = reader.next(minimum: 1)
        else {
            throw .malformed(scheme, "the parameter field does not decode")
        }
        var p: UInt64 = 1
        var t: UInt64 = 0
        var g: UInt64 = 0
        var logNROM: UInt64 = 0
        if !reader.atEnd {
            guard let have = reader.next(minimum: 1), have < 16 else {
                throw .malformed(scheme, "the optional-parameter bit set does not decode")
            }
            let decoded = [
                have & 1 != 0 ? reader.next(minimum: 2) : 1,
                have & 2 != 0 ? reader.next(minimum: 1) : 0,
                have & 4 != 0 ? reader.next(minimum: 1) : 0,
                have & 8 != 0 ? reader.next(minimum: 1) : 0,
            ]
            guard decoded.allSatisfy({ $0 != nil }) else {
                throw .malformed(scheme, "an optional parameter does not decode")
            }
            (p, t, g, logNROM) = (decoded[0]!, decoded[1]!, decoded[2]!, decoded[3]!)
        }
        guard reader.atEnd else {
            throw .malformed(scheme, "unexpected characters after the parameters")
        }
        // libxcrypt's own validity rules: flavors 0 (scrypt), 1 (WORM) and 2...257 (RW variants).
        guard flavor <= 257, logN <= 63, r <= UInt64(UInt32.max), p <= UInt64(UInt32.max), t <= UInt64(UInt32.max)
        else {
            throw .malformed(scheme, "a parameter is outside the range yescrypt defines")
        }
        guard g == 0 else {
            throw unsupported(
                scheme,
                "hash upgrades (g = \(g)) need yescrypt's upgrade API, which crypt does not offer"
            )
        }
        guard logNROM == 0 else {
            throw unsupported(scheme, "the hash needs a shared ROM, which only the system that made it has")
        }
        let salt = fields[1]
        guard !salt.isEmpty, salt.count <= 86, salt.count % 4 != 1, salt.allSatisfy(PasswordHashBase64.isCryptCharacter)
        else {
            throw .malformed(scheme, "the salt must be 2...86 characters from ./0-9A-Za-z")
        }
        guard fields[2].count == 43, PasswordHashBase64.decodeCrypt(fields[2]) != nil else {
            throw .malformed(scheme, "the hash must be 43 canonical characters from ./0-9A-Za-z")
        }

        // Memory is 128·r·N bytes whatever the flavor; computed in a width that cannot overflow.
        var memoryBytes = UInt64.max
        if logN < 48 {
            let (product, overflow) = (128 * r).multipliedReportingOverflow(by: 1 << logN)
            if !overflow { memoryBytes = product }
        }
        if memoryBytes > UInt64(limits.yescryptMaxMemoryBytes) {
            throw .outOfBounds(
                scheme,
                "memory (128·r·N, N = 2^\(logN), r = \(r))",
                describeBytes(memoryBytes),
                allowed: "maximum \(describeBytes(limits.yescryptMaxMemoryBytes))",
                limit: "yescryptMaxMemoryBytes"
            )
        }
        if p > UInt64(limits.yescryptMaxParallelism) {
            throw .outOfBounds(
                scheme,
                "p",
                p,
                allowed: "maximum \(limits.yescryptMaxParallelism)",
                limit: "yescryptMaxParallelism"
            )
        }
        if t > UInt64(limits.yescryptMaxTime) {
            throw .outOfBounds(scheme, "t", t, allowed: "maximum \(limits.yescryptMaxTime)", limit: "yescryptMaxTime")
        }
        // Memory, p and t are bounded by now, so the work cannot overflow.
        let work = PasswordHashLimits.yescryptWorkBytes(
            memoryBytes: Int(memoryBytes),
            flavor: Int(flavor),
            p: Int(p),
            t: Int(t)
        )
        if work > limits.yescryptMaxWorkBytes {
            throw .outOfBounds(
                scheme,
                "work (memory × passes, flavor \(flavor), p = \(p), t = \(t))",
                describeBytes(work),
                allowed: "maximum \(describeBytes(limits.yescryptMaxWorkBytes))",
                limit: "yescryptMaxWorkBytes"
            )
        }
        return .libxcrypt(
            Libxcrypt(
                format: .yescrypt,
                scheme: scheme,
                costDescription: "N=2^\(logN), r=\(r), p=\(p), t=\(t) (\(describeBytes(memoryBytes)))",
                encoded: String(decoding: bytes, as: UTF8.self)
            )
        )
    }

    static func describeBytes(_ bytes: UInt64) -> String {
        bytes > UInt64(Int.max) ? "more than 8 EiB" : describeBytes(Int(bytes))
    }
}

/// Reads yescrypt's variable-length integers: the first character's value says how many characters
/// follow (values 0...47 stand alone, 48...55 take one more, and so on), the rest add six bits each.
private struct YescryptParameterReader {
    private let chars: ArraySlice<UInt8>
    private var index: ArraySlice<UInt8>.Index

    init(_ chars: ArraySlice<UInt8>) {
        self.chars = chars
        self.index = chars.startIndex
    }

    var atEnd: Bool { index == chars.endIndex }

    mutating func next(minimum: UInt64) -> UInt64? {
        guard !atEnd, let first = PasswordHashBase64.cryptValue(chars[index]) else { return nil }
        index += 1
        var start: UInt64 = 0
        var end: UInt64 = 47
        var count = 1
        var bits: UInt64 = 0
        var value = minimum
        let c = UInt64(first)
        while c > end {
            value += (end + 1 - start) << bits
            start = end + 1
            end = start + (62 - end) / 2
            count += 1
            bits += 6
        }
        value += (c - start) << bits
        while count > 1 {
            guard !atEnd, let digit = PasswordHashBase64.cryptValue(chars[index]) else { return nil }
            index += 1
            bits -= 6
            value += UInt64(digit) << bits
            count -= 1
        }
        return value
    }
}
