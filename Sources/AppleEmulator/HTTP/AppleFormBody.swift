import HTTPCore
import UpgradeEngine

/// Reads the body of a request to one of Apple's form endpoints the strict way Apple does
/// (TN3107): the media type must be `application/x-www-form-urlencoded`, every byte outside
/// `A-Z a-z 0-9 - . _ ~ *` must be percent-encoded (a form that is not is `invalid_client`), and
/// a malformed pair or a value that is not UTF-8 is `invalid_request`. Repeated parameters are
/// refused by the emulator's endpoint code itself.
enum AppleFormBody {
    static func parameters(_ request: HTTPRequest) throws(AppleEndpointError) -> [(name: String, value: String)] {
        let contentTypes = request.headers.values(for: "Content-Type")
        guard contentTypes.count == 1, isFormMediaType(contentTypes[0]) else {
            throw refuse(.invalidRequest, "Content-Type must be application/x-www-form-urlencoded")
        }
        guard request.query == nil else {
            throw refuse(.invalidRequest, "parameters belong in the body, not in the URL")
        }
        return try decode(request.body)
    }

    /// `application/x-www-form-urlencoded`, optionally with `charset=utf-8`; nothing else.
    static func isFormMediaType(_ value: String) -> Bool {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false).map { trimmed($0).lowercased() }
        guard parts.first == "application/x-www-form-urlencoded" else { return false }
        return parts.dropFirst().allSatisfy { $0 == "charset=utf-8" || $0 == "charset=\"utf-8\"" }
    }

    static func decode(_ body: [UInt8]) throws(AppleEndpointError) -> [(name: String, value: String)] {
        guard !body.isEmpty else { return [] }
        var pairs: [(name: String, value: String)] = []
        for piece in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
            guard let equals = piece.firstIndex(of: UInt8(ascii: "=")) else {
                throw refuse(.invalidRequest, "a form field has no '=' (or the body has an empty field)")
            }
            let name = try decodeComponent(piece[..<equals])
            let value = try decodeComponent(piece[piece.index(after: equals)...])
            guard !name.isEmpty else { throw refuse(.invalidRequest, "a form field has an empty name") }
            pairs.append((name, value))
        }
        return pairs
    }

    private static func decodeComponent(_ bytes: ArraySlice<UInt8>) throws(AppleEndpointError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "%"):
                guard bytes.endIndex - index >= 3, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else {
                    throw refuse(.invalidClient, "the form is not percent-encoded: '%' without two hex digits")
                }
                out.append(high << 4 | low)
                index += 3
            case UInt8(ascii: "+"):
                out.append(UInt8(ascii: " "))
                index += 1
            case _ where isAllowedRaw(byte):
                out.append(byte)
                index += 1
            default:
                throw refuse(
                    .invalidClient,
                    "the form is not percent-encoded: byte 0x\(String(byte, radix: 16)) must be sent as %XX"
                )
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw refuse(.invalidRequest, "a form field is not UTF-8 once percent-decoded")
        }
        return text
    }

    private static func isAllowedRaw(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: "*"):
            true
        default:
            false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    static func refuse(_ code: AppleEndpointError.Code, _ message: String) -> AppleEndpointError {
        AppleEndpointError(code: code, httpStatus: 400, message: message)
    }
}
