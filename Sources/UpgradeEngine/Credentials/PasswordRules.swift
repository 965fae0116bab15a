/// What a new password must meet (`POST /v1/password-changes`), written in Apple's password-rules
/// syntax so that one string configures the server (`UPGRADE_PASSWORD_RULES`) and the extension's
/// Info.plist (`ASAccountAuthenticationModificationPasswordGenerationRequirements`), and the passwords
/// iOS generates for the extension meet what the server checks.
///
/// The syntax: rules separated by `;`, each `name: value`, names and
/// class names case-insensitive, white space around tokens ignored.
/// - `minlength: N`, `maxlength: N`: length in UTF-16 code units, 1...1024, as Apple's tools and
///   HTML's `minlength` count it (docs/architecture.md §4.7): a character outside the Basic
///   Multilingual Plane counts 2;
/// - `required: C, ...`: the password contains a character of at least one listed class; each
///   `required` rule is checked on its own;
/// - `allowed: C, ...`: characters outside the union of every `allowed` and `required` class are
///   refused; without any `allowed` rule, `ascii-printable` is allowed (with the required classes);
/// - `max-consecutive: N`: no character repeated more than N times in a row.
///
/// Classes: `upper` (A-Z), `lower` (a-z), `digit` (0-9), `special` (printable ASCII that is not a
/// letter or digit, space included), `ascii-printable` (U+0020...U+007E), `unicode` (any character),
/// and custom sets `[...]` of printable ASCII characters (a `]` only as the set's first character).
///
/// Two rules of the server's own hold whatever the string says, so that `allowed: unicode` cannot
/// admit a password nobody can see: no control character (line and paragraph separators
/// included), no character (grapheme cluster) that shows nothing (a zero-width space, a bidi
/// override, a soft hyphen, a filler, an unassigned code point or a noncharacter; a zero-width
/// joiner or a variation selector inside an emoji or a word shows with it and stays), and not only
/// white space.
///
/// Parsing is strict and bounded: an unknown name or class, a missing value, a number out of bounds,
/// a repeated `minlength`, `maxlength` or `max-consecutive`, `minlength` above `maxlength`, rules
/// that allow nothing but the space, or a string over 1024 bytes is refused with a message naming
/// the problem.
public struct PasswordRules: Sendable, Hashable, CustomStringConvertible {
    public enum CharacterClass: Sendable, Hashable {
        case upper, lower, digit, special, asciiPrintable, unicode
        /// The characters in the order written, each once.
        case custom([Unicode.Scalar])

        func contains(_ scalar: Unicode.Scalar) -> Bool {
            let value = scalar.value
            switch self {
            case .upper: return (0x41...0x5A).contains(value)
            case .lower: return (0x61...0x7A).contains(value)
            case .digit: return (0x30...0x39).contains(value)
            case .special:
                return (0x20...0x7E).contains(value) && !Self.upper.contains(scalar)
                    && !Self.lower.contains(scalar) && !Self.digit.contains(scalar)
            case .asciiPrintable: return (0x20...0x7E).contains(value)
            case .unicode: return true
            case .custom(let scalars): return scalars.contains(scalar)
            }
        }

        /// As written in a canonical rule.
        var name: String {
            switch self {
            case .upper: "upper"
            case .lower: "lower"
            case .digit: "digit"
            case .special: "special"
            case .asciiPrintable: "ascii-printable"
            case .unicode: "unicode"
            case .custom(let scalars): "[" + String(String.UnicodeScalarView(scalars)) + "]"
            }
        }

        /// For messages: what a character of this class is.
        var phrase: String {
            switch self {
            case .upper: "an uppercase letter"
            case .lower: "a lowercase letter"
            case .digit: "a digit"
            case .special: "a special character"
            case .asciiPrintable: "a printable ASCII character"
            case .unicode: "a character"
            case .custom: "one of the characters \(name)"
            }
        }
    }

    public var minLength: Int?
    public var maxLength: Int?
    /// Each inner list is one `required` rule.
    public var required: [[CharacterClass]]
    /// The union of every `allowed` rule; empty when there is none.
    public var allowed: [CharacterClass]
    public var maxConsecutive: Int?

    /// The documented default, which the strong passwords iOS generates (`abcdEf-ghijK1-lmnoPq`) meet.
    public static let defaultText =
        "minlength: 12; maxlength: 64; required: lower; required: upper; required: digit; allowed: ascii-printable;"
    // The default text is a constant known to parse; a failure here is a programming error caught by tests.
    public static let `default` = try! PasswordRules(defaultText)

    /// Bounds of the parser.
    public static let maxTextBytes = 1024
    public static let maxLengthBound = 1024
    public static let maxRules = 64

    /// Parses `text`; see the type's documentation for the syntax.
    public init(_ text: String) throws(PasswordRulesError) {
        guard text.utf8.count <= Self.maxTextBytes else {
            throw PasswordRulesError("the rules are longer than \(Self.maxTextBytes) bytes")
        }
        var minLength: Int?
        var maxLength: Int?
        var maxConsecutive: Int?
        var required: [[CharacterClass]] = []
        var allowed: [CharacterClass] = []
        var pieces = Self.split(text)
        // One trailing `;` is the usual style; an empty rule anywhere else is a typo.
        if let last = pieces.last, last.allSatisfy(\.properties.isWhitespace), pieces.count > 1 { pieces.removeLast() }
        guard pieces.count <= Self.maxRules else { throw PasswordRulesError("more than \(Self.maxRules) rules") }
        for (index, piece) in pieces.enumerated() {
            let rule = Self.trimmed(piece)
            let position = "rule \(index + 1)"
            guard !rule.isEmpty else { throw PasswordRulesError("\(position) is empty (two ';' in a row?)") }
            guard let colon = rule.firstIndex(of: ":") else {
                throw PasswordRulesError("\(position) has no ':'; write it as NAME: VALUE, e.g. minlength: 12")
            }
            let name = String(String.UnicodeScalarView(Self.trimmed(rule[..<colon]))).lowercased()
            let value = Self.trimmed(rule[rule.index(after: colon)...])
            guard !value.isEmpty else { throw PasswordRulesError("\(position) ('\(name)') has no value") }
            switch name {
            case "minlength":
                try Self.setOnce(&minLength, Self.number(value, name), name)
            case "maxlength":
                try Self.setOnce(&maxLength, Self.number(value, name), name)
            case "max-consecutive":
                try Self.setOnce(&maxConsecutive, Self.number(value, name), name)
            case "required":
                required.append(try Self.classes(value, name))
            case "allowed":
                for item in try Self.classes(value, name) where !allowed.contains(item) { allowed.append(item) }
            default:
                throw PasswordRulesError(
                    "\(position): unknown rule name; use minlength, maxlength, required, allowed or max-consecutive"
                )
            }
        }
        if let minLength, let maxLength, minLength > maxLength {
            throw PasswordRulesError("minlength (\(minLength)) is greater than maxlength (\(maxLength))")
        }
        // Only white space could meet such rules, and the server refuses a password of only that.
        let permitted = (allowed.isEmpty ? [.asciiPrintable] : allowed) + required.joined()
        if permitted.allSatisfy({ item in
            guard case .custom(let members) = item else { return false }
            return members == [" "]
        }) {
            throw PasswordRulesError("the rules allow only the space; a password of only white space is always refused")
        }
        self.minLength = minLength
        self.maxLength = maxLength
        self.required = required
        self.allowed = allowed
        self.maxConsecutive = maxConsecutive
    }

    /// The canonical text: lowercase names, `minlength`, `maxlength`, each `required`, `allowed`,
    /// `max-consecutive`, in that order, `; ` between rules and a final `;`. Parsing it gives the same
    /// rules; it is what `upgrade-cli password rules` prints for the Info.plist.
    public var description: String {
        var rules: [String] = []
        if let minLength { rules.append("minlength: \(minLength)") }
        if let maxLength { rules.append("maxlength: \(maxLength)") }
        for classes in required { rules.append("required: " + classes.map(\.name).joined(separator: ", ")) }
        if !allowed.isEmpty { rules.append("allowed: " + allowed.map(\.name).joined(separator: ", ")) }
        if let maxConsecutive { rules.append("max-consecutive: \(maxConsecutive)") }
        return rules.map { $0 + ";" }.joined(separator: " ")
    }

    /// The first rule `password` breaks, or nil if it meets them all. The violation names the rule and
    /// never quotes the password or any of its characters.
    public func violation(of password: String) -> PasswordRuleViolation? {
        let scalars = Array(password.unicodeScalars)
        let length = password.utf16.count
        if let minLength, length < minLength {
            return PasswordRuleViolation(
                rule: "minlength: \(minLength)",
                message: "the new password must be at least \(minLength) characters long"
            )
        }
        if let maxLength, length > maxLength {
            return PasswordRuleViolation(
                rule: "maxlength: \(maxLength)",
                message: "the new password must be at most \(maxLength) characters long"
            )
        }
        let permitted = (allowed.isEmpty ? [.asciiPrintable] : allowed) + required.joined()
        if !scalars.allSatisfy({ scalar in permitted.contains { $0.contains(scalar) } }) {
            let rule =
                allowed.isEmpty ? "allowed: ascii-printable" : "allowed: " + allowed.map(\.name).joined(separator: ", ")
            return PasswordRuleViolation(
                rule: rule,
                message: "the new password contains a character the rules do not allow"
            )
        }
        if scalars.contains(where: Self.isControl) || password.contains(where: Self.showsNothing) {
            return .invisibleCharacter
        }
        if scalars.allSatisfy(\.properties.isWhitespace) { return .onlyWhiteSpace }
        for classes in required where !scalars.contains(where: { scalar in classes.contains { $0.contains(scalar) } }) {
            return PasswordRuleViolation(
                rule: "required: " + classes.map(\.name).joined(separator: ", "),
                message: "the new password must contain " + classes.map(\.phrase).joined(separator: " or ")
            )
        }
        if let maxConsecutive {
            var run = 0
            var previous: Unicode.Scalar?
            for scalar in scalars {
                run = scalar == previous ? run + 1 : 1
                previous = scalar
                if run > maxConsecutive {
                    return PasswordRuleViolation(
                        rule: "max-consecutive: \(maxConsecutive)",
                        message:
                            "the new password must not repeat a character more than \(maxConsecutive) times in a row"
                    )
                }
            }
        }
        return nil
    }

    /// Controls text rather than shows: C0 and C1 controls (tab and line feed among them) and the
    /// line and paragraph separators.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// A character with nothing to show: no code point in it is visible, and it is not white space.
    /// A joiner or variation selector extends the character before it, which then shows.
    static func showsNothing(_ character: Character) -> Bool {
        let scalars = character.unicodeScalars
        return !scalars.contains(where: isVisible) && !scalars.allSatisfy(\.properties.isWhitespace)
    }

    /// Shows a glyph of its own: not white space, not default-ignorable (zero-width characters,
    /// joiners, bidi controls, variation selectors, fillers), not a format or control character,
    /// and assigned.
    static func isVisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        guard !properties.isWhitespace, !properties.isDefaultIgnorableCodePoint, !properties.isNoncharacterCodePoint
        else { return false }
        switch properties.generalCategory {
        case .control, .format, .unassigned, .surrogate, .lineSeparator, .paragraphSeparator: return false
        default: return true
        }
    }

    // MARK: Parsing

    /// Splits on `;` outside custom sets, so `[;]` is a set and not two rules.
    private static func split(_ text: String) -> [[Unicode.Scalar]] {
        var pieces: [[Unicode.Scalar]] = [[]]
        var inSet = false
        var setLength = 0
        for scalar in text.unicodeScalars {
            if inSet {
                // A `]` right after `[` is a member; any later one closes the set.
                if scalar == "]" && setLength > 0 { inSet = false }
                setLength += 1
            } else if scalar == "[" {
                inSet = true
                setLength = 0
            } else if scalar == ";" {
                pieces.append([])
                continue
            }
            pieces[pieces.count - 1].append(scalar)
        }
        return pieces
    }

    private static func trimmed<C: Collection<Unicode.Scalar>>(_ scalars: C) -> [Unicode.Scalar] {
        let array = Array(scalars)
        guard let first = array.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = array.lastIndex(where: { !$0.properties.isWhitespace })
        else { return [] }
        return Array(array[first...last])
    }

    private static func number(_ value: [Unicode.Scalar], _ name: String) throws(PasswordRulesError) -> Int {
        guard value.count <= 4, value.allSatisfy({ (0x30...0x39).contains($0.value) }),
            let number = Int(String(String.UnicodeScalarView(value))), (1...maxLengthBound).contains(number)
        else {
            throw PasswordRulesError("\(name) must be a whole number from 1 to \(maxLengthBound)")
        }
        return number
    }

    private static func setOnce(_ slot: inout Int?, _ value: Int, _ name: String) throws(PasswordRulesError) {
        guard slot == nil else { throw PasswordRulesError("\(name) is given more than once") }
        slot = value
    }

    /// A comma list of class names and custom sets.
    private static func classes(
        _ value: [Unicode.Scalar],
        _ rule: String
    ) throws(PasswordRulesError)
        -> [CharacterClass]
    {
        var result: [CharacterClass] = []
        var index = 0
        while index < value.count {
            let item: CharacterClass
            if value[index] == "[" {
                var members: [Unicode.Scalar] = []
                var end = index + 1
                while end < value.count, value[end] != "]" || end == index + 1 {
                    let scalar = value[end]
                    guard (0x20...0x7E).contains(scalar.value) else {
                        throw PasswordRulesError("\(rule): a custom set may hold printable ASCII characters only")
                    }
                    if !members.contains(scalar) { members.append(scalar) }
                    end += 1
                }
                guard end < value.count else { throw PasswordRulesError("\(rule): a custom set has no closing ']'") }
                guard !members.isEmpty else { throw PasswordRulesError("\(rule): a custom set is empty") }
                item = .custom(members)
                index = end + 1
            } else {
                var end = index
                while end < value.count, value[end] != "," { end += 1 }
                let name = String(String.UnicodeScalarView(trimmed(value[index..<end]))).lowercased()
                switch name {
                case "upper": item = .upper
                case "lower": item = .lower
                case "digit": item = .digit
                case "special": item = .special
                case "ascii-printable": item = .asciiPrintable
                case "unicode": item = .unicode
                case "": throw PasswordRulesError("\(rule): an empty class in the list (a stray ',')")
                default:
                    throw PasswordRulesError(
                        "\(rule): unknown character class; use upper, lower, digit, special, ascii-printable, unicode or [characters]"
                    )
                }
                index = end
            }
            if !result.contains(item) { result.append(item) }
            // Next: white space, then a ',' and another class, or the end.
            while index < value.count, value[index].properties.isWhitespace { index += 1 }
            guard index < value.count else { break }
            guard value[index] == "," else {
                throw PasswordRulesError("\(rule): separate character classes with ','")
            }
            index += 1
            while index < value.count, value[index].properties.isWhitespace { index += 1 }
            guard index < value.count else { throw PasswordRulesError("\(rule): the list ends with ','") }
        }
        return result
    }
}

/// A rule a new password breaks: `rule` as written in the canonical rules (e.g. `required: digit`),
/// `message` for the client. Neither ever quotes the password.
public struct PasswordRuleViolation: Sendable, Hashable, CustomStringConvertible {
    public let rule: String
    public let message: String

    public init(rule: String, message: String) {
        self.rule = rule
        self.message = message
    }

    /// `the new password must contain a digit (required: digit)`.
    public var description: String { "\(message) (\(rule))" }

    /// Not one of Apple's rules: the server's own, for a control, zero-width or other invisible
    /// character (which `allowed: unicode` would otherwise admit).
    public static let invisibleCharacter = PasswordRuleViolation(
        rule: "visible-characters",
        message: "the new password contains a control character or one that shows nothing (zero-width, formatting)"
    )

    /// Not one of Apple's rules: the server's own, for a password of only spaces or other white space.
    public static let onlyWhiteSpace = PasswordRuleViolation(
        rule: "not-only-white-space",
        message: "the new password must contain a character other than white space"
    )

    /// Not one of Apple's rules: the server's own, for a new password equal to the current one.
    public static let sameAsCurrent = PasswordRuleViolation(
        rule: "different-from-current",
        message: "the new password must differ from the current one"
    )
}

/// Why a password-rules string was refused.
public struct PasswordRulesError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String

    init(_ message: String) { self.message = message }

    public var description: String { message }
}
