/// Why a string is not a username under the PRECIS `UsernameCaseMapped` profile (`Username`).
///
/// The message names the offending code point and the rule, in one line. It depends on the string
/// alone, never on which accounts exist, so it can be shown to whoever typed it.
public struct UsernameError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case empty
            case tooLong
            case disallowedCodePoint
            case contextRule
            case bidiRule
            case unstable
            case mixedScripts
            case mixedNumbers
        }

        private let wrapped: Wrapped

        private init(_ wrapped: Wrapped) {
            self.wrapped = wrapped
        }

        /// Nothing but white space.
        public static let empty = Code(.empty)
        /// Longer than `Username.maxBytes` UTF-8 bytes, as typed or once mapped.
        public static let tooLong = Code(.tooLong)
        /// A code point the IdentifierClass disallows (RFC 8264 §9), or one unassigned in the Unicode
        /// version the server's tables cover.
        public static let disallowedCodePoint = Code(.disallowedCodePoint)
        /// A joiner, or one of RFC 5892's contextual code points, outside the context that allows it.
        public static let contextRule = Code(.contextRule)
        /// Right-to-left text that breaks the Bidi Rule of RFC 5893.
        public static let bidiRule = Code(.bidiRule)
        /// Mapping the result again would change it (RFC 8264 §7 requires a stable result).
        public static let unstable = Code(.unstable)
        /// Scripts mixed beyond Unicode's highly restrictive level (UTS #39 §5.2), as in `аlice` with
        /// a Cyrillic а.
        public static let mixedScripts = Code(.mixedScripts)
        /// Decimal digits of more than one number system (UTS #39 §5.3).
        public static let mixedNumbers = Code(.mixedNumbers)

        public var description: String { wrapped.rawValue }
    }

    public let code: Code
    public let message: String
    /// The code point at fault, for `disallowedCodePoint` and `contextRule`; for `mixedScripts` and
    /// `mixedNumbers`, the first of the least used script or of the second number system.
    public let codePoint: Unicode.Scalar?
    /// The rule that refused it, e.g. `precis_ignorable_properties` or `zero_width_joiner`: the names
    /// the `precis_i18n` reference implementation uses; `restriction_level` and `mixed_numbers` for
    /// the UTS #39 checks, which PRECIS does not have.
    public let rule: String?

    init(_ code: Code, _ message: String, codePoint: Unicode.Scalar? = nil, rule: String? = nil) {
        self.code = code
        self.message = message
        self.codePoint = codePoint
        self.rule = rule
    }

    public var description: String { message }

    /// `U+00AD SOFT HYPHEN`: how messages name a code point.
    static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        guard let name = scalar.properties.name ?? scalar.properties.nameAlias else { return code }
        return "\(code) \(name)"
    }
}
