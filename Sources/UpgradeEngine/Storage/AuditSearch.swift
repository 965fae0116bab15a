/// A search of the audit trail (`AuditStore.auditEvents`): every filter that is set must hold, and
/// the answer is newest first (highest id first). Pages are keyset pages on the id: the next page
/// asks for ids below the last one seen, so rows appended meanwhile neither shift nor repeat a page.
public struct AuditSearch: Sendable, Equatable {
    /// How many rows one page may have, and how many it has unless asked.
    public static let limits = 1...1000
    public static let defaultLimit = 100

    public var accountID: String?
    /// The event type, exactly (`upgrade.passwordEvaluated`, `account.created`, ...).
    public var event: String?
    /// Events at or after this Unix time.
    public var since: Int64?
    /// Events before this Unix time.
    public var until: Int64?
    public var limit: Int
    /// Only events whose id is below this one: the last id of the page before.
    public var beforeID: Int64?

    public init(
        accountID: String? = nil,
        event: String? = nil,
        since: Int64? = nil,
        until: Int64? = nil,
        limit: Int = AuditSearch.defaultLimit,
        beforeID: Int64? = nil
    ) {
        self.accountID = accountID
        self.event = event
        self.since = since
        self.until = until
        self.limit = limit
        self.beforeID = beforeID
    }
}

extension AuditSearch {
    /// A time as a search bound: Unix seconds (`1795514400`) or an RFC 3339 date-time
    /// (`2026-11-24T10:00:00Z`, `2026-11-24T11:00:00+01:00`; a fraction of a second is dropped). Nil
    /// for anything else, including a date without a time or a time without an offset, which would
    /// leave the instant open to guessing.
    public static func time(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        if !bytes.isEmpty, bytes.count <= 12, bytes.allSatisfy({ (0x30...0x39).contains($0) }) {
            return Int64(text)
        }
        return rfc3339(bytes)
    }

    /// RFC 3339 §5.6 `date-time`, checked field by field (days per month included).
    private static func rfc3339(_ bytes: [UInt8]) -> Int64? {
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + width] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            index += width
            return value
        }
        func expect(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour <= 23,
            minute <= 59, second <= 60
        else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let digits = bytes[index...].prefix { (0x30...0x39).contains($0) }.count
            guard digits > 0 else { return nil }
            index += digits
        }
        var offset: Int64 = 0
        if expect("Zz") {
            offset = 0
        } else {
            guard index < bytes.count else { return nil }
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard expect("+-"), let hours = number(2), expect(":"), let minutes = number(2), hours <= 23, minutes <= 59
            else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard index == bytes.count else { return nil }
        return days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = year / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
