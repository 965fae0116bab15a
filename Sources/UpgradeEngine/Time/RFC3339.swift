/// RFC 3339 timestamps in UTC (`2026-11-22T06:39:00Z`, or with `.123` milliseconds): every answer
/// and log line carries one, so the digits are computed here (proleptic Gregorian calendar, days
/// since the epoch to a civil date as in Howard Hinnant's `civil_from_days`) and written into one
/// buffer, with no calendar library call and no intermediate strings.
public enum RFC3339 {
    public static func utc(seconds: Int64, milliseconds: Int? = nil) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(seconds: seconds, milliseconds: milliseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The UTC day `seconds` falls on, in whole days since 1970-01-01 (rounded down before it).
    public static func day(of seconds: Int64) -> Int64 {
        seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    }

    /// `YYYY-MM-DD` of a UTC day given in whole days since 1970-01-01.
    public static func dayString(_ day: Int64) -> String { String(utc(seconds: day * 86_400).prefix(10)) }

    /// Appends the timestamp's ASCII bytes to `out`. Years outside 0...9999 are not representable in
    /// RFC 3339; they are clamped to its first or last second.
    public static func append(seconds: Int64, milliseconds: Int? = nil, to out: inout [UInt8]) {
        let seconds = min(max(seconds, -62_167_219_200), 253_402_300_799)
        let days = day(of: seconds)
        let secondOfDay = seconds - days * 86_400
        // civil_from_days: eras of 400 years (146 097 days) starting on 0000-03-01.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        func digits(_ value: Int64, _ width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        if let milliseconds {
            out.append(UInt8(ascii: "."))
            digits(Int64(min(max(milliseconds, 0), 999)), 3)
        }
        out.append(UInt8(ascii: "Z"))
    }
}
