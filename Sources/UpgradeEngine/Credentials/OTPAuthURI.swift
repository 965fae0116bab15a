/// A TOTP enrolment in the `otpauth://` Key URI format, as legacy systems export it:
/// `otpauth://totp/ISSUER:ACCOUNT?secret=BASE32&issuer=ISSUER&algorithm=SHA1&digits=6&period=30`.
///
/// Parsing rules, chosen for importing other systems' exports without guessing:
/// - scheme and type are case-insensitive; only `totp` is accepted (`hotp` gets its own error);
/// - the label is percent-decoded and split at its first `:` into issuer prefix and account name
///   (leading spaces of the account name are dropped, as the format allows);
/// - query values are percent-decoded with `+` read as a space (form encoding, which many generators
///   use); parameter names are case-insensitive; unknown parameters (`image`, `color`, ...) are ignored,
///   but a parameter the parser reads may appear only once;
/// - the secret is Base32, case-insensitive, with optional padding; spaces are removed first, because
///   secrets are often shown (and so exported) in groups of four. It must hold at least 80 bits: RFC
///   4226 asks 128 for new secrets, but 80-bit secrets are common in older systems and still far from
///   guessable, while anything shorter is refused;
/// - `algorithm` SHA1, SHA256 or SHA512 (default SHA1), `digits` 6 or 8 (default 6), `period` 30
///   (the default, and the only step the service verifies);
/// - if both the label prefix and `issuer` are present they must be equal.
public struct OTPAuthURI: Sendable {
    /// Longer input is refused before parsing; real URIs are a few hundred bytes.
    public static let maximumLength = 4096
    /// 80 bits.
    public static let minimumSecretLength = TOTP.minimumSecretLength
    /// 1024 bits, the HMAC-SHA512 block size; nothing legitimate is longer.
    public static let maximumSecretLength = 128

    public let secret: [UInt8]
    public let parameters: TOTPParameters
    public let issuer: String?
    public let accountName: String?

    public init(secret: [UInt8], parameters: TOTPParameters, issuer: String?, accountName: String?) {
        self.secret = secret
        self.parameters = parameters
        self.issuer = issuer
        self.accountName = accountName
    }

    public static func parse(_ uri: String) throws(OTPAuthURIError) -> OTPAuthURI {
        let bytes = Array(uri.utf8)
        guard bytes.count <= maximumLength else {
            throw OTPAuthURIError(.malformed, "otpauth URI is longer than \(maximumLength) bytes")
        }
        let scheme = Array("otpauth://".utf8)
        guard bytes.count >= scheme.count, asciiLowercased(bytes[0..<scheme.count]) == scheme else {
            throw OTPAuthURIError(.notOTPAuth, "not an otpauth URI: it must start with otpauth://totp/")
        }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
            throw OTPAuthURIError(.malformed, "otpauth URI contains control characters")
        }
        guard !bytes.contains(UInt8(ascii: "#")) else {
            throw OTPAuthURIError(.malformed, "otpauth URI has a fragment ('#'), which the format does not allow")
        }

        let rest = bytes[scheme.count...]
        let queryStart = rest.firstIndex(of: UInt8(ascii: "?"))
        let path = rest[..<(queryStart ?? rest.endIndex)]
        let query = queryStart.map { rest[($0 + 1)...] } ?? []
        let slash = path.firstIndex(of: UInt8(ascii: "/"))
        let type = asciiLowercased(path[..<(slash ?? path.endIndex)])
        switch type {
        case Array("totp".utf8):
            break
        case Array("hotp".utf8):
            throw OTPAuthURIError(
                .hotpUnsupported,
                "HOTP (counter-based) otpauth URIs are not supported; "
                    + "only time-based otpauth://totp/ URIs can be imported"
            )
        default:
            throw OTPAuthURIError(.unknownType, "unknown OTP type: the URI must start with otpauth://totp/")
        }
        let rawLabel = slash.map { path[($0 + 1)...] } ?? []
        guard let label = percentDecode(rawLabel, plusIsSpace: false) else {
            throw OTPAuthURIError(.malformed, "the otpauth URI's label has invalid percent-encoding or UTF-8")
        }

        let values = try queryValues(query)
        // What percent-encoding hides is held to the rule the raw URI is: no control characters
        // (C0, DEL and C1), which would otherwise reach a terminal or a log line decoded.
        let isControl = { (scalar: Unicode.Scalar) in scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value) }
        guard !label.unicodeScalars.contains(where: isControl),
            !(values.issuer?.unicodeScalars.contains(where: isControl) ?? false)
        else {
            throw OTPAuthURIError(
                .malformed,
                "the otpauth URI's label or issuer holds a percent-encoded control character"
            )
        }
        let (labelIssuer, accountName) = splitLabel(label)
        let issuerParameter = values.issuer.flatMap { $0.isEmpty ? nil : $0 }
        if let labelIssuer, let issuerParameter, labelIssuer != issuerParameter {
            throw OTPAuthURIError(
                .issuerMismatch,
                "the label's issuer prefix and the issuer parameter differ; make them equal or drop one"
            )
        }
        return OTPAuthURI(
            secret: try decodeSecret(values.secret),
            parameters: try decodeParameters(values),
            issuer: issuerParameter ?? labelIssuer,
            accountName: accountName
        )
    }

    /// The query parameters the parser reads, each seen at most once.
    private struct QueryValues {
        var secret: String?
        var issuer: String?
        var algorithm: String?
        var digits: String?
        var period: String?
    }

    private static func queryValues(_ query: ArraySlice<UInt8>) throws(OTPAuthURIError) -> QueryValues {
        var values = QueryValues()
        for pair in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let rawName = pair[..<(equals ?? pair.endIndex)]
            let rawValue = equals.map { pair[($0 + 1)...] } ?? []
            let name = String(decoding: asciiLowercased(rawName), as: UTF8.self)
            let keyPath: WritableKeyPath<QueryValues, String?>
            switch name {
            case "secret": keyPath = \.secret
            case "issuer": keyPath = \.issuer
            case "algorithm": keyPath = \.algorithm
            case "digits": keyPath = \.digits
            case "period": keyPath = \.period
            default: continue  // Other generators add `image`, `color`, `counter`, ...: not ours to judge.
            }
            guard values[keyPath: keyPath] == nil else {
                throw OTPAuthURIError(
                    .duplicateParameter,
                    "the otpauth URI has more than one \(name) parameter; keep exactly one"
                )
            }
            guard let value = percentDecode(rawValue, plusIsSpace: true) else {
                throw OTPAuthURIError(
                    .malformed,
                    "the otpauth URI's \(name) parameter has invalid percent-encoding or UTF-8"
                )
            }
            values[keyPath: keyPath] = value
        }
        return values
    }

    private static func decodeSecret(_ text: String?) throws(OTPAuthURIError) -> [UInt8] {
        let compact = (text ?? "").utf8.filter { $0 != UInt8(ascii: " ") }
        guard !compact.isEmpty else {
            throw OTPAuthURIError(.missingSecret, "the otpauth URI has no secret parameter")
        }
        guard let secret = Base32.decode(String(decoding: compact, as: UTF8.self)) else {
            throw OTPAuthURIError(
                .invalidSecret,
                "the otpauth URI's secret is not Base32 (RFC 4648: letters A-Z and digits 2-7, optional = padding)"
            )
        }
        guard secret.count >= minimumSecretLength else {
            throw OTPAuthURIError(
                .secretTooShort,
                "the otpauth URI's secret is \(secret.count * 8) bits; "
                    + "at least \(minimumSecretLength * 8) bits are required"
            )
        }
        guard secret.count <= maximumSecretLength else {
            throw OTPAuthURIError(
                .secretTooLong,
                "the otpauth URI's secret is \(secret.count * 8) bits; "
                    + "at most \(maximumSecretLength * 8) bits are accepted"
            )
        }
        return secret
    }

    private static func decodeParameters(_ values: QueryValues) throws(OTPAuthURIError) -> TOTPParameters {
        var algorithm = DigestAlgorithm.sha1
        if let text = values.algorithm {
            guard let parsed = DigestAlgorithm(rawValue: text.uppercased()) else {
                throw OTPAuthURIError(
                    .unsupportedAlgorithm,
                    "the otpauth URI's algorithm must be SHA1, SHA256 or SHA512"
                )
            }
            algorithm = parsed
        }
        var digits = 6
        if let text = values.digits {
            // Exact spellings only: "06", "+6" or "6.0" are not what any generator writes.
            switch text {
            case "6": digits = 6
            case "8": digits = 8
            default: throw OTPAuthURIError(.unsupportedDigits, "the otpauth URI's digits must be 6 or 8")
            }
        }
        if let text = values.period, text != "30" {
            throw OTPAuthURIError(
                .unsupportedPeriod,
                "the otpauth URI's period must be 30; only 30-second TOTP steps are supported"
            )
        }
        do {
            return try TOTPParameters(algorithm: algorithm, digits: digits, period: TOTPParameters.supportedPeriod)
        } catch {
            // Unreachable: digits and period were checked against the same rules above.
            throw OTPAuthURIError(.unsupportedDigits, error.description)
        }
    }

    /// Splits `Issuer:Account` at the first colon; empty parts become nil.
    private static func splitLabel(_ label: String) -> (issuer: String?, account: String?) {
        let utf8 = Array(label.utf8)
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else {
            return (nil, label.isEmpty ? nil : label)
        }
        let issuer = String(decoding: utf8[..<colon], as: UTF8.self)
        let account = String(decoding: utf8[(colon + 1)...].drop { $0 == UInt8(ascii: " ") }, as: UTF8.self)
        return (issuer.isEmpty ? nil : issuer, account.isEmpty ? nil : account)
    }

    /// Percent-decodes `bytes`; nil for a `%` not followed by two hex digits or a result that is not UTF-8.
    private static func percentDecode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> String? {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let c = bytes[index]
            if c == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let hi = hexValue(bytes[index + 1]),
                    let lo = hexValue(bytes[index + 2])
                else { return nil }
                out.append(hi << 4 | lo)
                index += 3
            } else {
                out.append(plusIsSpace && c == UInt8(ascii: "+") ? UInt8(ascii: " ") : c)
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func asciiLowercased<C: Collection<UInt8>>(_ bytes: C) -> [UInt8] {
        bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 0x20 : $0 }
    }
}

extension OTPAuthURI: Equatable {
    public static func == (lhs: OTPAuthURI, rhs: OTPAuthURI) -> Bool {
        let sameSecret = ConstantTime.equals(lhs.secret, rhs.secret)
        return sameSecret && lhs.parameters == rhs.parameters && lhs.issuer == rhs.issuer
            && lhs.accountName == rhs.accountName
    }
}

// The secret must never reach a log line or a test failure message through interpolation or reflection.
extension OTPAuthURI: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "OTPAuthURI(issuer: \(issuer.map { "\"\($0)\"" } ?? "nil"), accountName: "
            + "\(accountName.map { "\"\($0)\"" } ?? "nil"), algorithm: \(parameters.algorithm.rawValue), "
            + "digits: \(parameters.digits), period: \(parameters.period), secret: <\(secret.count * 8) bits redacted>)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "issuer": issuer as Any, "accountName": accountName as Any, "parameters": parameters,
                "secret": "<redacted>",
            ],
            displayStyle: .struct
        )
    }
}
