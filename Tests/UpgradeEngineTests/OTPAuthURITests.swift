import Testing

@testable import UpgradeEngine

@Suite("OTPAuthURI")
struct OTPAuthURITests {
    /// 80 bits: "Hello!" followed by DE AD BE EF.
    static let shortSecret = "JBSWY3DPEHPK3PXP"
    static let shortSecretHex = "48656c6c6f21deadbeef"
    /// RFC 6238's 160-bit SHA-1 seed.
    static let rfcSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    static let rfcSecretHex = "3132333435363738393031323334353637383930"

    struct Good: Sendable, CustomTestStringConvertible {
        let name: String
        let uri: String
        let secretHex: String
        var issuer: String? = nil
        var accountName: String? = nil
        var algorithm: DigestAlgorithm = .sha1
        var digits = 6
        var testDescription: String { name }
    }

    static let good: [Good] = [
        Good(
            name: "the format's own example",
            uri: "otpauth://totp/Example:alice@google.com?secret=\(shortSecret)&issuer=Example",
            secretHex: shortSecretHex,
            issuer: "Example",
            accountName: "alice@google.com"
        ),
        Good(
            name: "every parameter spelled out",
            uri: "otpauth://totp/ACME%20Co:john.doe@email.com?secret=\(rfcSecret)&issuer=ACME%20Co"
                + "&algorithm=SHA256&digits=8&period=30",
            secretHex: rfcSecretHex,
            issuer: "ACME Co",
            accountName: "john.doe@email.com",
            algorithm: .sha256,
            digits: 8
        ),
        Good(
            name: "case-insensitive scheme, type, names, algorithm and secret",
            uri: "OTPAUTH://TOTP/alice?SECRET=\(rfcSecret.lowercased())&Algorithm=sha512&DIGITS=6",
            secretHex: rfcSecretHex,
            accountName: "alice",
            algorithm: .sha512
        ),
        Good(
            name: "secret in groups with encoded spaces; leading space of the account dropped",
            uri: "otpauth://totp/Example:%20alice?secret=JBSW%20Y3DP%20EHPK%203PXP&issuer=Example",
            secretHex: shortSecretHex,
            issuer: "Example",
            accountName: "alice"
        ),
        Good(
            name: "plus is literal in the label and a space in the query",
            uri: "otpauth://totp/Big+Corp:bob?secret=JBSW+Y3DP+EHPK+3PXP&issuer=Big%2BCorp",
            secretHex: shortSecretHex,
            issuer: "Big+Corp",
            accountName: "bob"
        ),
        Good(
            name: "form-encoded issuer without a label prefix",
            uri: "otpauth://totp/bob?secret=\(shortSecret)&issuer=Big+Corp",
            secretHex: shortSecretHex,
            issuer: "Big Corp",
            accountName: "bob"
        ),
        Good(
            name: "padded secret, padding raw",
            uri: "otpauth://totp/x?secret=YG4P22IF25FHAABQHVYEXZWAOALCUEQ7SSY7LE3VYNOO3ZESQRRQ====",
            secretHex: Digest.sha256("siwa-upgrade totp fixture 256").hexString,
            accountName: "x"
        ),
        Good(
            name: "padded secret, padding percent-encoded",
            uri: "otpauth://totp/x?secret=YG4P22IF25FHAABQHVYEXZWAOALCUEQ7SSY7LE3VYNOO3ZESQRRQ%3D%3D%3D%3D",
            secretHex: Digest.sha256("siwa-upgrade totp fixture 256").hexString,
            accountName: "x"
        ),
        Good(
            name: "unknown parameters and empty pairs are ignored",
            uri: "otpauth://totp/Example:alice?&image=https%3A%2F%2Fexample.com%2Flogo.png&secret=\(shortSecret)"
                + "&&color=ff0000&counter=5&issuer=Example&",
            secretHex: shortSecretHex,
            issuer: "Example",
            accountName: "alice"
        ),
        Good(
            name: "issuer prefix with an empty account",
            uri: "otpauth://totp/Example:?secret=\(shortSecret)",
            secretHex: shortSecretHex,
            issuer: "Example"
        ),
        Good(name: "empty label", uri: "otpauth://totp/?secret=\(shortSecret)", secretHex: shortSecretHex),
        Good(name: "no label at all", uri: "otpauth://totp?secret=\(shortSecret)", secretHex: shortSecretHex),
        Good(
            name: "UTF-8 label and issuer",
            uri: "otpauth://totp/J%C3%B6rg%20GmbH:j%C3%B6rg?secret=\(shortSecret)&issuer=J%C3%B6rg%20GmbH",
            secretHex: shortSecretHex,
            issuer: "J\u{f6}rg GmbH",
            accountName: "j\u{f6}rg"
        ),
        Good(
            name: "an empty issuer parameter defers to the label",
            uri: "otpauth://totp/Example:alice?secret=\(shortSecret)&issuer=",
            secretHex: shortSecretHex,
            issuer: "Example",
            accountName: "alice"
        ),
        Good(
            name: "account names may contain colons after the issuer prefix",
            uri: "otpauth://totp/Example:urn:user:7?secret=\(shortSecret)&issuer=Example",
            secretHex: shortSecretHex,
            issuer: "Example",
            accountName: "urn:user:7"
        ),
    ]

    @Test("accepts well-formed URIs", arguments: good)
    func parses(_ row: Good) throws {
        let parsed = try OTPAuthURI.parse(row.uri)
        #expect(parsed.secret == [UInt8](hex: row.secretHex))
        #expect(parsed.issuer == row.issuer)
        #expect(parsed.accountName == row.accountName)
        #expect(parsed.parameters == (try TOTPParameters(algorithm: row.algorithm, digits: row.digits)))
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let name: String
        let uri: String
        let code: OTPAuthURIError.Code
        /// The secret as written in the URI, which the error must not repeat.
        var secretText = OTPAuthURITests.shortSecret
        /// Words the message must contain to be useful.
        var mentions: [String] = []
        var testDescription: String { name }
    }

    static let s = shortSecret
    static let bad: [Bad] = [
        Bad(
            name: "another scheme",
            uri: "https://example.com/totp?secret=\(s)",
            code: .notOTPAuth,
            mentions: ["otpauth://"]
        ),
        Bad(name: "one slash", uri: "otpauth:/totp/x?secret=\(s)", code: .notOTPAuth),
        Bad(name: "empty", uri: "", code: .notOTPAuth),
        Bad(name: "no slashes", uri: "otpauth:\(s)", code: .notOTPAuth),
        Bad(
            name: "hotp",
            uri: "otpauth://hotp/Example:alice?secret=\(s)&counter=0",
            code: .hotpUnsupported,
            mentions: ["HOTP", "not supported"]
        ),
        Bad(name: "unknown type", uri: "otpauth://motp/x?secret=\(s)", code: .unknownType, mentions: ["totp"]),
        Bad(name: "secret where the type belongs", uri: "otpauth://\(s)", code: .unknownType),
        Bad(name: "no secret", uri: "otpauth://totp/x?issuer=Example", code: .missingSecret, mentions: ["secret"]),
        Bad(name: "empty secret", uri: "otpauth://totp/x?secret=", code: .missingSecret),
        Bad(name: "blank secret", uri: "otpauth://totp/x?secret=%20%20", code: .missingSecret),
        Bad(
            name: "secret is not base32",
            uri: "otpauth://totp/x?secret=JBSWY3DPEHPK3PX1",
            code: .invalidSecret,
            secretText: "JBSWY3DPEHPK3PX1",
            mentions: ["Base32"]
        ),
        Bad(name: "secret of impossible length", uri: "otpauth://totp/x?secret=\(s)J", code: .invalidSecret),
        Bad(
            name: "secret with punctuation",
            uri: "otpauth://totp/x?secret=JBSWY3DPEHPK3PX%21",
            code: .invalidSecret,
            secretText: "JBSWY3DPEHPK3PX"
        ),
        Bad(
            name: "secret with hyphens",
            uri: "otpauth://totp/x?secret=JBSW-Y3DP-EHPK-3PXP",
            code: .invalidSecret,
            secretText: "Y3DP-EHPK"
        ),
        Bad(
            name: "40-bit secret",
            uri: "otpauth://totp/x?secret=JBSWY3DP",
            code: .secretTooShort,
            secretText: "JBSWY3DP",
            mentions: ["40 bits", "80 bits"]
        ),
        Bad(
            name: "72-bit secret",
            uri: "otpauth://totp/x?secret=JBSWY3DPEHPK3PW=",
            code: .secretTooShort,
            secretText: "JBSWY3DPEHPK3PW",
            mentions: ["72 bits"]
        ),
        Bad(
            name: "1040-bit secret",
            uri: "otpauth://totp/x?secret=\(Base32.encode([UInt8](repeating: 0x5a, count: 130), padding: false))",
            code: .secretTooLong,
            secretText: String(Base32.encode([UInt8](repeating: 0x5a, count: 130)).prefix(40)),
            mentions: ["1040 bits"]
        ),
        Bad(
            name: "MD5",
            uri: "otpauth://totp/x?secret=\(s)&algorithm=MD5",
            code: .unsupportedAlgorithm,
            mentions: ["SHA1, SHA256 or SHA512"]
        ),
        Bad(
            name: "SHA-1 with a hyphen",
            uri: "otpauth://totp/x?secret=\(s)&algorithm=SHA-1",
            code: .unsupportedAlgorithm
        ),
        Bad(name: "empty algorithm", uri: "otpauth://totp/x?secret=\(s)&algorithm=", code: .unsupportedAlgorithm),
        Bad(
            name: "7 digits",
            uri: "otpauth://totp/x?secret=\(s)&digits=7",
            code: .unsupportedDigits,
            mentions: ["6 or 8"]
        ),
        Bad(name: "10 digits", uri: "otpauth://totp/x?secret=\(s)&digits=10", code: .unsupportedDigits),
        Bad(
            name: "digits with a leading zero",
            uri: "otpauth://totp/x?secret=\(s)&digits=06",
            code: .unsupportedDigits
        ),
        Bad(name: "digits with a sign", uri: "otpauth://totp/x?secret=\(s)&digits=%2B6", code: .unsupportedDigits),
        Bad(name: "empty digits", uri: "otpauth://totp/x?secret=\(s)&digits=", code: .unsupportedDigits),
        Bad(
            name: "60-second period",
            uri: "otpauth://totp/x?secret=\(s)&period=60",
            code: .unsupportedPeriod,
            mentions: ["30"]
        ),
        Bad(
            name: "period with a leading zero",
            uri: "otpauth://totp/x?secret=\(s)&period=030",
            code: .unsupportedPeriod
        ),
        Bad(name: "empty period", uri: "otpauth://totp/x?secret=\(s)&period=", code: .unsupportedPeriod),
        Bad(
            name: "two secrets",
            uri: "otpauth://totp/x?secret=\(s)&secret=\(rfcSecret)",
            code: .duplicateParameter,
            mentions: ["secret"]
        ),
        Bad(
            name: "two secrets differing in case",
            uri: "otpauth://totp/x?SECRET=\(s)&secret=\(s)",
            code: .duplicateParameter
        ),
        Bad(
            name: "two equal digits",
            uri: "otpauth://totp/x?secret=\(s)&digits=6&digits=6",
            code: .duplicateParameter,
            mentions: ["digits"]
        ),
        Bad(
            name: "two issuers",
            uri: "otpauth://totp/x?secret=\(s)&issuer=A&issuer=B",
            code: .duplicateParameter,
            mentions: ["issuer"]
        ),
        Bad(
            name: "two algorithms",
            uri: "otpauth://totp/x?secret=\(s)&algorithm=SHA1&algorithm=SHA256",
            code: .duplicateParameter
        ),
        Bad(name: "two periods", uri: "otpauth://totp/x?secret=\(s)&period=30&period=30", code: .duplicateParameter),
        Bad(
            name: "issuers disagree",
            uri: "otpauth://totp/Example:alice?secret=\(s)&issuer=Other",
            code: .issuerMismatch,
            mentions: ["issuer"]
        ),
        Bad(
            name: "issuers differ in case",
            uri: "otpauth://totp/example:alice?secret=\(s)&issuer=Example",
            code: .issuerMismatch
        ),
        Bad(name: "broken escape in the label", uri: "otpauth://totp/Ex%2:alice?secret=\(s)", code: .malformed),
        Bad(name: "escape cut short at the end", uri: "otpauth://totp/x?secret=\(s)%", code: .malformed),
        Bad(name: "escape that is not hex", uri: "otpauth://totp/x?issuer=%ZZ&secret=\(s)", code: .malformed),
        Bad(name: "invalid UTF-8", uri: "otpauth://totp/x?secret=\(s)&issuer=%FF", code: .malformed),
        Bad(name: "fragment", uri: "otpauth://totp/x?secret=\(s)#section", code: .malformed),
        Bad(name: "newline", uri: "otpauth://totp/x?secret=\(s)\n", code: .malformed),
        Bad(name: "NUL", uri: "otpauth://totp/x\0?secret=\(s)", code: .malformed),
        Bad(name: "percent-encoded escape in the label", uri: "otpauth://totp/E:%1Bal?secret=\(s)", code: .malformed),
        Bad(
            name: "percent-encoded DEL in the issuer",
            uri: "otpauth://totp/x?secret=\(s)&issuer=a%7F",
            code: .malformed
        ),
        Bad(name: "percent-encoded C1 control", uri: "otpauth://totp/%C2%9Bx?secret=\(s)", code: .malformed),
        Bad(
            name: "longer than 4096 bytes",
            uri: "otpauth://totp/x?secret=\(s)&image=\(String(repeating: "a", count: 4100))",
            code: .malformed,
            mentions: ["4096"]
        ),
    ]

    @Test(
        "refuses malformed or unsupported URIs with a specific error that does not echo the URI or secret",
        arguments: bad
    )
    func refuses(_ row: Bad) {
        let error = #expect(throws: OTPAuthURIError.self) { try OTPAuthURI.parse(row.uri) }
        guard let error else { return }
        #expect(error.code == row.code)
        for text in [error.description, String(reflecting: error), "\(error)", error.message] {
            let lowered = text.lowercased()
            #expect(!lowered.contains(row.secretText.lowercased()), "the message must not contain the secret")
            #expect(!lowered.contains(String(row.secretText.prefix(8)).lowercased()), "nor part of it")
            if !row.uri.isEmpty {
                #expect(!text.contains(row.uri), "the message must not contain the URI")
            }
            #expect(!text.contains("\n"))
        }
        for word in row.mentions {
            #expect(error.message.contains(word), "the message mentions \(word)")
        }
    }

    @Test("every error code has a row in the table")
    func everyCodeCovered() {
        let codes: Set<OTPAuthURIError.Code> = [
            .notOTPAuth, .hotpUnsupported, .unknownType, .malformed, .missingSecret, .invalidSecret, .secretTooShort,
            .secretTooLong, .unsupportedAlgorithm, .unsupportedDigits, .unsupportedPeriod, .duplicateParameter,
            .issuerMismatch,
        ]
        #expect(Set(Self.bad.map(\.code)) == codes)
    }

    static let roundTrips: [OTPAuthURI] = [
        OTPAuthURI(secret: Array(0..<20), parameters: .standard, issuer: "Example", accountName: "alice@example.com"),
        OTPAuthURI(
            secret: Array(0..<32),
            parameters: try! TOTPParameters(algorithm: .sha256, digits: 8),
            issuer: "ACME & Sons: Widgets",
            accountName: "j\u{f6}rg + friends?#="
        ),
        OTPAuthURI(
            secret: Array(0..<64),
            parameters: try! TOTPParameters(algorithm: .sha512),
            issuer: nil,
            accountName: "only an account"
        ),
        OTPAuthURI(secret: Array(0..<10), parameters: .standard, issuer: "Issuer Only", accountName: nil),
        OTPAuthURI(secret: Array(0..<13), parameters: .standard, issuer: nil, accountName: nil),
        OTPAuthURI(secret: Array(0..<20), parameters: .standard, issuer: "Example", accountName: "urn:user:7"),
    ]

    @Test("uriString produces URIs that parse back to the same value", arguments: roundTrips)
    func roundTrip(_ original: OTPAuthURI) throws {
        let uri = original.uriString()
        #expect(uri.hasPrefix("otpauth://totp/"))
        #expect(try OTPAuthURI.parse(uri) == original)
    }

    @Test("uriString writes the form authenticator apps expect")
    func uriStringShape() throws {
        let uri = try OTPAuthURI.parse(
            "otpauth://totp/Example:alice@google.com?secret=\(Self.shortSecret)&issuer=Example"
        )
        #expect(
            uri.uriString()
                == "otpauth://totp/Example:alice@google.com?secret=\(Self.shortSecret)&issuer=Example&algorithm=SHA1&digits=6&period=30"
        )
    }

    @Test("equality compares every field, the secret included")
    func equality() throws {
        let base = try OTPAuthURI.parse("otpauth://totp/Example:alice?secret=\(Self.shortSecret)&issuer=Example")
        #expect(base == base)
        #expect(
            base
                != OTPAuthURI(
                    secret: Array(base.secret.dropLast()) + [0],
                    parameters: base.parameters,
                    issuer: base.issuer,
                    accountName: base.accountName
                )
        )
        #expect(
            base
                != OTPAuthURI(
                    secret: base.secret,
                    parameters: base.parameters,
                    issuer: nil,
                    accountName: base.accountName
                )
        )
        #expect(
            base
                != OTPAuthURI(secret: base.secret, parameters: base.parameters, issuer: base.issuer, accountName: "bob")
        )
        #expect(
            base
                != OTPAuthURI(
                    secret: base.secret,
                    parameters: try TOTPParameters(digits: 8),
                    issuer: base.issuer,
                    accountName: base.accountName
                )
        )
    }

    @Test("the secret never shows in descriptions or reflection")
    func secretRedacted() throws {
        let uri = try OTPAuthURI.parse("otpauth://totp/Example:alice?secret=\(Self.rfcSecret)&issuer=Example")
        let rendered = [
            String(describing: uri), String(reflecting: uri), "\(uri)",
            "\(Mirror(reflecting: uri).children.map { $0 })",
        ]
        for text in rendered {
            #expect(!text.contains(Self.rfcSecret))
            #expect(!text.contains("12345678901234567890"))
            #expect(!text.contains(Self.rfcSecretHex))
            #expect(!text.contains("49, 50, 51"), "nor the bytes as a decimal array")
        }
        #expect(rendered[0].contains("alice") && rendered[0].contains("160 bits"))
    }
}

extension OTPAuthURI {
    /// The URI for this enrolment, in the form authenticator apps read. The issuer goes into the label
    /// prefix as well, unless it contains a colon (which the label cannot carry). The secret is encoded
    /// without padding, as apps expect.
    func uriString() -> String {
        var label = ""
        if let issuer, !issuer.utf8.contains(UInt8(ascii: ":")) {
            label = Self.percentEncode(issuer) + ":"
        }
        label += Self.percentEncode(accountName ?? "")
        var uri = "otpauth://totp/\(label)?secret=\(Base32.encode(secret, padding: false))"
        if let issuer {
            uri += "&issuer=\(Self.percentEncode(issuer))"
        }
        uri += "&algorithm=\(parameters.algorithm.rawValue)&digits=\(parameters.digits)&period=\(parameters.period)"
        return uri
    }

    /// Percent-encodes everything except RFC 3986 unreserved characters and `@` (common in account names).
    private static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "@"):
                out.append(c)
            default:
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(c >> 4)], hex[Int(c & 0x0f)]])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
