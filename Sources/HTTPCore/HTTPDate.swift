import Glibc

/// The `Date` header value (IMF-fixdate, RFC 9110 §5.6.7), formatted at most once per second per
/// event loop. Formatted by hand: strftime would follow the process locale.
struct HTTPDate {
    private var second: time_t = -1
    private(set) var bytes: [UInt8] = []

    /// The value for the current second.
    mutating func current() -> [UInt8] {
        let now = time(nil)
        if now != second {
            second = now
            bytes = Self.format(now)
        }
        return bytes
    }

    static func format(_ seconds: time_t) -> [UInt8] {
        var value = seconds
        var parts = tm()
        gmtime_r(&value, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func twoDigits(_ number: Int32) -> String {
            number < 10 ? "0\(number)" : "\(number)"
        }
        let text =
            "\(days[Int(parts.tm_wday)]), \(twoDigits(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):"
            + "\(twoDigits(parts.tm_sec)) GMT"
        return Array(text.utf8)
    }
}
