#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 timestamps in UTC (`2026-11-22T06:39:00Z`, or with `.123` milliseconds), formatted
/// with `gmtime_r`: every answer and log line carries one.
enum RFC3339 {
    static func utc(seconds: Int64, milliseconds: Int? = nil) -> String {
        var parts = tm()
        var time = time_t(seconds)
        gmtime_r(&time, &parts)
        var text = ""
        text.reserveCapacity(24)
        func append(_ value: Int32, width: Int) {
            let digits = String(value)
            if digits.count < width { text += String(repeating: "0", count: width - digits.count) }
            text += digits
        }
        append(parts.tm_year + 1900, width: 4)
        text += "-"
        append(parts.tm_mon + 1, width: 2)
        text += "-"
        append(parts.tm_mday, width: 2)
        text += "T"
        append(parts.tm_hour, width: 2)
        text += ":"
        append(parts.tm_min, width: 2)
        text += ":"
        append(parts.tm_sec, width: 2)
        if let milliseconds {
            text += "."
            append(Int32(milliseconds), width: 3)
        }
        text += "Z"
        return text
    }
}
