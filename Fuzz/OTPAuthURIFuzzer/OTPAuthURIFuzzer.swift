// libFuzzer entry point for `OTPAuthURI.parse`, which reads the TOTP enrolments of imported and
// provisioned accounts (`otpauth://totp/...`, the Key URI format). Compiled with the TOTP sources
// and OpenSSL's digests (see ../run.sh). Besides "no crash, no memory error", it checks:
// 1. An accepted URI's secret is 80 to 1024 bits, its digits 6 or 8, its period 30, and its issuer
//    and account name hold no control character.
// 2. The same enrolment written out again in the format's plainest form (every reserved byte
//    percent-encoded, the issuer as a parameter, the secret in upper-case Base32 without padding)
//    parses to an equal value.

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
func encoded(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            let hex = Array("0123456789ABCDEF".utf8)
            out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
        }
    }
    return out
}

func base32(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    var out: [UInt8] = []
    var buffer = 0
    var bits = 0
    for byte in bytes {
        buffer = (buffer << 8) | Int(byte)
        bits += 8
        while bits >= 5 {
            out.append(alphabet[(buffer >> (bits - 5)) & 31])
            bits -= 5
        }
        buffer &= (1 << bits) - 1
    }
    if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
    return String(decoding: out, as: UTF8.self)
}

/// The URI, its issuer as the `issuer` parameter alone; nil when the format cannot say the account
/// name: one with a colon goes after an empty issuer prefix, which drops its leading spaces.
func written(_ uri: OTPAuthURI) -> String? {
    var label = uri.accountName.map(encoded) ?? ""
    // Bytes, not characters: a colon followed by a combining mark is one Character, not ":".
    if let account = uri.accountName, account.utf8.contains(UInt8(ascii: ":")) {
        if account.utf8.first == UInt8(ascii: " ") { return nil }
        label = ":" + label
    }
    var text = "otpauth://totp/\(label)?secret=\(base32(uri.secret))"
    if let issuer = uri.issuer { text += "&issuer=\(encoded(issuer))" }
    let algorithm: String
    switch uri.parameters.algorithm {
    case .sha256: algorithm = "SHA256"
    case .sha512: algorithm = "SHA512"
    default: algorithm = "SHA1"
    }
    return text + "&algorithm=\(algorithm)&digits=\(uri.parameters.digits)&period=\(uri.parameters.period)"
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let uri = try? OTPAuthURI.parse(text) else { return 0 }
    // 1.
    let bits = uri.secret.count * 8
    require((80...1024).contains(bits), "a \(bits)-bit secret accepted: \(text)")
    require([6, 8].contains(uri.parameters.digits), "\(uri.parameters.digits) digits accepted: \(text)")
    require(uri.parameters.period == 30, "a period of \(uri.parameters.period) accepted: \(text)")
    for name in [uri.issuer, uri.accountName].compactMap({ $0 }) {
        let control = name.unicodeScalars.contains { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }
        require(!control, "a control character accepted in \(name.debugDescription): \(text)")
    }
    // 2.
    // Percent-encoding may take a long name past the length limit: nothing to compare then.
    guard let again = written(uri), again.utf8.count <= OTPAuthURI.maximumLength else { return 0 }
    do {
        let reread = try OTPAuthURI.parse(again)
        require(reread == uri, "written out as \(again), it reads otherwise: \(text)")
    } catch {
        require(false, "written out as \(again), it is refused (\(error)): \(text)")
    }
    return 0
}
