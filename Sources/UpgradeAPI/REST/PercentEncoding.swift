/// Percent-decoding for paths and queries, one strict rule for both.
enum PercentEncoding {
    /// `text` percent-decoded (RFC 3986 §2.1), strictly: every `%` starts two hex digits and the
    /// bytes are UTF-8; nil otherwise. (Foundation's `removingPercentEncoding` leaves a stray `%`
    /// in place on some platforms.) In a query, `+` is a space (HTML form encoding).
    static func decoded(_ text: Substring, plusIsSpace: Bool = false) -> String? {
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let input = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < input.count, let high = hex(input[index + 1]), let low = hex(input[index + 2]) else {
                    return nil
                }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(validating: output, as: UTF8.self)
    }
}
