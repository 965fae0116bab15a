/// UUIDv7s (RFC 9562) that increase through one import: the millisecond, then a 12-bit counter
/// in `rand_a` (RFC 9562 §6.2, Method 1), then 62 random bits.
///
/// Increasing ids land at the end of every index keyed by account id (the accounts, credentials,
/// profiles and audit trail), so a batch writes a few pages per index. Ids spread at random
/// within a second would touch nearly every page that second's accounts occupy, in each batch.
/// Uniqueness against ids made elsewhere at the same time rests on the random bits.
struct AccountIDGenerator {
    private var millisecond: UInt64 = 0
    private var counter: UInt64 = 0
    private var random: [UInt8] = []
    private var used = 0

    static let randomBytesPerID = 8

    /// Draws the random bits of the next `count` ids at once: one `getrandom` per batch.
    mutating func reserve(_ count: Int) {
        let needed = count * Self.randomBytesPerID
        if random.count - used >= needed { return }
        random = SecureRandom.bytes(max(needed, 64 * Self.randomBytesPerID))
        used = 0
    }

    /// The next id, after every id this generator gave before; `now` in seconds.
    mutating func next(now: Int64) -> String {
        let start = UInt64(max(0, now)) * 1000
        if start > millisecond {
            millisecond = start
            counter = 0
        } else {
            counter += 1
            if counter == 1 << 12 {
                millisecond += 1
                counter = 0
            }
        }
        reserve(1)
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: millisecond >> (40 - 8 * UInt64(index))) }
        bytes[6] = 0x70 | UInt8(truncatingIfNeeded: counter >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        for index in 0..<8 { bytes[8 + index] = random[used + index] }
        used += Self.randomBytesPerID
        bytes[8] = 0x80 | (bytes[8] & 0x3f)
        return Self.format(bytes)
    }

    /// The 8-4-4-4-12 lowercase hex form.
    static func format(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 36) { text in
            var at = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[at] = UInt8(ascii: "-")
                    at += 1
                }
                text[at] = digits[Int(byte >> 4)]
                text[at + 1] = digits[Int(byte & 0x0f)]
                at += 2
            }
            return at
        }
    }
}
