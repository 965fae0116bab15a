import Foundation

/// The PRECIS IdentifierClass (RFC 8264 §4.2): which code points a username may contain, computed
/// from Swift's Unicode properties by the derived-property algorithm of RFC 8264 §8, plus the
/// contextual rules of RFC 5892 Appendix A for the code points that are allowed only in context.
///
/// Swift exposes no Hangul_Syllable_Type, Script or Joining_Type property, so the few rules that need
/// them use the fixed ranges below (docs/usernames.md). Tests check every code point against an
/// independent implementation (`Tests/Fixtures/usernames`).
enum PRECISIdentifierClass {
    /// The derived property of one code point, with the rule (category) that decided it, named as
    /// the `precis_i18n` reference implementation names them.
    enum Property: Equatable {
        case pvalid
        case contextJ
        case contextO
        case disallowed(rule: String)
        case unassigned
    }

    /// Code points first assigned after this version count as unassigned: Foundation's normalization
    /// data, which decides "has a compatibility decomposition", stops there, while the standard
    /// library's properties are newer. A test pins this against the toolchain.
    static let unicodeVersion = (major: 15, minor: 1)

    /// RFC 8264 §8, in its order. `FREE_PVAL` is disallowed in the IdentifierClass.
    static func property(_ scalar: Unicode.Scalar) -> Property {
        let value = scalar.value
        if let exception = exception(value) { return exception }
        let properties = scalar.properties
        let category = properties.generalCategory
        if category == .unassigned && !properties.isNoncharacterCodePoint { return .unassigned }
        if let age = properties.age, (age.major, age.minor) > unicodeVersion { return .unassigned }
        if (0x21...0x7E).contains(value) { return .pvalid }
        if properties.isJoinControl { return .contextJ }
        if isOldHangulJamo(value) { return .disallowed(rule: "old_hangul_jamo") }
        if properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint {
            return .disallowed(rule: "precis_ignorable_properties")
        }
        if category == .control { return .disallowed(rule: "controls") }
        if hasCompatibilityDecomposition(scalar) { return .disallowed(rule: "has_compat") }
        switch category {
        case .lowercaseLetter, .uppercaseLetter, .otherLetter, .decimalNumber, .modifierLetter, .nonspacingMark,
            .spacingMark:
            return .pvalid
        case .titlecaseLetter, .letterNumber, .otherNumber, .enclosingMark:
            return .disallowed(rule: "other_letter_digits")
        case .spaceSeparator:
            return .disallowed(rule: "spaces")
        case .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
            return .disallowed(rule: "symbols")
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
            .finalPunctuation, .otherPunctuation:
            return .disallowed(rule: "punctuation")
        default:
            return .disallowed(rule: "other")
        }
    }

    /// Refuses the first code point the class disallows, or that stands outside its context.
    static func check(_ scalars: [Unicode.Scalar]) throws(UsernameError) {
        for (index, scalar) in scalars.enumerated() {
            switch property(scalar) {
            case .pvalid:
                continue
            case .unassigned:
                throw UsernameError(
                    .disallowedCodePoint,
                    "\(UsernameError.describe(scalar)) is not allowed in a username: it is not assigned in Unicode \(unicodeVersion.major).\(unicodeVersion.minor)",
                    codePoint: scalar,
                    rule: "unassigned"
                )
            case .disallowed(let rule):
                throw UsernameError(
                    .disallowedCodePoint,
                    "\(UsernameError.describe(scalar)) is not allowed in a username: \(explanation(rule))",
                    codePoint: scalar,
                    rule: rule
                )
            case .contextJ, .contextO:
                if let rule = contextFailure(at: index, in: scalars) {
                    throw UsernameError(
                        .contextRule,
                        "\(UsernameError.describe(scalar)) is not allowed here in a username: \(explanation(rule))",
                        codePoint: scalar,
                        rule: rule
                    )
                }
            }
        }
    }

    private static func explanation(_ rule: String) -> String {
        switch rule {
        case "exceptions": "RFC 5892 excludes it"
        case "old_hangul_jamo": "a conjoining Hangul jamo (use precomposed syllables)"
        case "precis_ignorable_properties": "an invisible (default-ignorable) code point or a noncharacter"
        case "controls": "a control character"
        case "has_compat": "it has a compatibility decomposition (a look-alike of other characters)"
        case "other_letter_digits": "a titlecase letter, letter number, other number or enclosing mark"
        case "spaces": "a space"
        case "symbols": "a symbol"
        case "punctuation": "punctuation other than ASCII"
        case "zero_width_joiner": "a zero width joiner is allowed only right after a virama (RFC 5892 A.2)"
        case "zero_width_nonjoiner":
            "a zero width non-joiner is allowed only right after a virama (RFC 5892 A.1; its joining-type context is not supported)"
        case "middle_dot": "a middle dot is allowed only between two l (RFC 5892 A.3)"
        case "greek_keraia": "the keraia must be followed by a Greek letter (RFC 5892 A.4)"
        case "hebrew_punctuation": "geresh and gershayim must follow a Hebrew letter (RFC 5892 A.5, A.6)"
        case "katakana_middle_dot":
            "the katakana middle dot needs a Hiragana, Katakana or Han character in the name (RFC 5892 A.7)"
        case "arabic_indic": "Arabic-Indic digits cannot be mixed with extended Arabic-Indic digits (RFC 5892 A.8)"
        case "extended_arabic_indic":
            "extended Arabic-Indic digits cannot be mixed with Arabic-Indic digits (RFC 5892 A.9)"
        default: "a format, private-use or separator code point"
        }
    }

    // MARK: Categories Swift does not expose

    /// RFC 5892 §2.6, the Exceptions category (F).
    private static func exception(_ value: UInt32) -> Property? {
        switch value {
        case 0x00DF, 0x03C2, 0x06FD, 0x06FE, 0x0F0B, 0x3007: .pvalid
        case 0x00B7, 0x0375, 0x05F3, 0x05F4, 0x30FB, 0x0660...0x0669, 0x06F0...0x06F9: .contextO
        case 0x0640, 0x07FA, 0x302E, 0x302F, 0x3031...0x3035, 0x303B: .disallowed(rule: "exceptions")
        default: nil
        }
    }

    /// Hangul_Syllable_Type L, V or T: the conjoining jamo, fixed since Unicode 5.2.
    private static func isOldHangulJamo(_ value: UInt32) -> Bool {
        (0x1100...0x11FF).contains(value) || (0xA960...0xA97C).contains(value) || (0xD7B0...0xD7C6).contains(value)
            || (0xD7CB...0xD7FB).contains(value)
    }

    /// `toNFKC(cp) != cp`, compared scalar by scalar: Swift's `String ==` would call canonically
    /// equivalent strings equal and miss singletons such as U+212B ANGSTROM SIGN.
    static func hasCompatibilityDecomposition(_ scalar: Unicode.Scalar) -> Bool {
        !String(scalar).precomposedStringWithCompatibilityMapping.unicodeScalars.elementsEqual(CollectionOfOne(scalar))
    }

    // MARK: Contextual rules (RFC 5892 Appendix A)

    /// The name of the rule that refuses `scalars[index]` in its context, or nil if the context allows it.
    private static func contextFailure(at index: Int, in scalars: [Unicode.Scalar]) -> String? {
        let before = index > 0 ? scalars[index - 1] : nil
        let after = index + 1 < scalars.count ? scalars[index + 1] : nil
        let followsVirama = before.map { $0.properties.canonicalCombiningClass == .virama } ?? false
        switch scalars[index].value {
        case 0x200D:
            return followsVirama ? nil : "zero_width_joiner"
        case 0x200C:
            // The second way in, a joining-type pattern (Arabic-script joining), needs Joining_Type,
            // which Swift lacks: refused, stricter than the RFC.
            return followsVirama ? nil : "zero_width_nonjoiner"
        case 0x00B7:
            return before?.value == 0x6C && after?.value == 0x6C ? nil : "middle_dot"
        case 0x0375:
            return after.map(isGreek) ?? false ? nil : "greek_keraia"
        case 0x05F3, 0x05F4:
            return before.map(isHebrew) ?? false ? nil : "hebrew_punctuation"
        case 0x30FB:
            return scalars.contains(where: isHiraganaKatakanaHan) ? nil : "katakana_middle_dot"
        case 0x0660...0x0669:
            return scalars.contains { (0x06F0...0x06F9).contains($0.value) } ? "arabic_indic" : nil
        case 0x06F0...0x06F9:
            return scalars.contains { (0x0660...0x0669).contains($0.value) } ? "extended_arabic_indic" : nil
        default:
            return "other"
        }
    }

    // Script=Greek, Hebrew, Hiragana, Katakana and Han as blocks. They need to be exact only for code
    // points the class allows (a neighbour it disallows refuses the name anyway); a test checks that.

    static func isGreek(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0370...0x03E1, 0x03F0...0x03FF, 0x1D26...0x1D2A, 0x1F00...0x1FFF, 0xAB65, 0x1D242...0x1D244: true
        default: false
        }
    }

    static func isHebrew(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0591...0x05F4, 0xFB1D...0xFB4F: true
        default: false
        }
    }

    static func isHiraganaKatakanaHan(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        // 30FB and 30FC are Common, 3099 and 309A Inherited.
        case 0x3005, 0x3007, 0x3041...0x3096, 0x309D...0x309F, 0x30A1...0x30FA, 0x30FD...0x30FF, 0x31F0...0x31FF,
            0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x16FE3, 0x16FF0...0x16FF6, 0x1AFF0...0x1B16F,
            0x20000...0x3FFFF:
            true
        default: false
        }
    }
}
