import Foundation

/// A username in the one form the server keys accounts, lookups and lockouts by: the PRECIS
/// `UsernameCaseMapped` profile (RFC 8265 §3.3), so that strings which look alike are one username
/// or are refused. `init` is the only place the rule lives; every caller goes through it.
///
/// The rule, in order (docs/usernames.md):
/// 1. white space (Unicode White_Space) around the name is removed: the application's own step, as before;
/// 2. fullwidth and halfwidth forms become their ordinary forms (`ｃａｒｏｌ` is `carol`);
/// 3. letters are lowercased (Unicode toLowerCase, with the final-sigma rule);
/// 4. the result is put in Unicode Normalization Form C (`José` typed either way is one name);
/// 5. every code point must be allowed by the IdentifierClass of RFC 8264: letters, digits, marks and
///    ASCII punctuation; no invisible code points, controls, spaces, symbols, other punctuation or
///    compatibility look-alikes; joiners and RFC 5892's contextual code points only where allowed;
/// 6. right-to-left names must satisfy the Bidi Rule of RFC 5893;
/// 7. applying 2–4 again must change nothing;
/// 8. the name must not mix scripts beyond Unicode's "highly restrictive" level (UTS #39 §5.2: one
///    script, or Latin with Han, Hiragana and Katakana, with Han and Bopomofo, or with Han and
///    Hangul), nor digits of two number systems. PRECIS maps look-alikes within a script; this is what
///    refuses `аlice` with a Cyrillic а. Look-alikes in one script (`ɑlice`) are one account's name
///    at most: account creation compares confusable skeletons (`skeleton`, `UsernameSkeletons`).
public struct Username: Sendable, Hashable, CustomStringConvertible {
    /// The enforced form: what `accounts.username` stores and the lockout key.
    public let value: String

    /// The limit on the name as typed and as stored, in UTF-8 bytes.
    public static let maxBytes = 256

    public init(_ typed: String) throws(UsernameError) {
        let (string, mapped) = try Self.precisEnforced(typed)
        // Visible ASCII is Latin and Common only, with one number system: nothing to ask ICU.
        if let mapped { try Self.checkScripts(string, mapped) }
        value = string
    }

    /// Steps 1–7, the PRECIS profile alone, as `precis_i18n` enforces it (the fixture tests compare
    /// this): the enforced string, and its code points unless it is visible ASCII.
    static func precisEnforced(_ typed: String) throws(UsernameError) -> (String, [Unicode.Scalar]?) {
        guard typed.utf8.count <= Self.maxBytes else {
            throw UsernameError(.tooLong, "the username is longer than \(Self.maxBytes) bytes")
        }
        // The common case, visible ASCII only, needs no mapping beyond lowercasing and passes every
        // check: all of it is PVALID and none of it is right-to-left.
        if !typed.isEmpty, typed.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            return (typed.lowercased(), nil)
        }
        // White_Space only: Foundation's trimming set also takes invisible format characters such as
        // U+200B, which the class must see and refuse rather than have silently dropped.
        let scalars = Array(typed.unicodeScalars)
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { throw UsernameError(.empty, "the username is empty") }
        let mapped = Self.map(Array(scalars[first...last]))
        try PRECISIdentifierClass.check(mapped)
        try BidiRule.check(mapped)
        guard Self.map(mapped) == mapped else {
            throw UsernameError(.unstable, "the username changes when its rules are applied again")
        }
        var string = ""
        string.unicodeScalars.append(contentsOf: mapped)
        guard string.utf8.count <= Self.maxBytes else {
            throw UsernameError(.tooLong, "the username is longer than \(Self.maxBytes) bytes once lowercased")
        }
        return (string, mapped)
    }

    public var description: String { value }

    /// The confusable skeleton (UTS #39 §4) of the enforced form: two accounts whose usernames have
    /// one skeleton look alike, so creating the second is refused.
    public var skeleton: String { Self.skeleton(ofStored: value) }

    /// The skeleton of a username as an account stores it, enforced or from before the profile.
    public static func skeleton(ofStored username: String) -> String { SpoofChecker.shared.skeleton(username) }

    /// True when `stored` is already in this form, compared code point by code point: Swift's `==`
    /// on strings treats canonically equivalent strings as equal, which is exactly what must not hide
    /// an NFD name here.
    public func isStored(as stored: String) -> Bool { value.utf8.elementsEqual(stored.utf8) }

    // MARK: The mapping rules (RFC 8264 §7 steps 1-4; additional mapping: none)

    static func map(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] {
        let lowered = lowercase(scalars.map(widthMapped))
        var string = ""
        string.unicodeScalars.append(contentsOf: lowered)
        return Array(string.precomposedStringWithCanonicalMapping.unicodeScalars)
    }

    /// Fullwidth and halfwidth code points (decomposition type `<wide>` or `<narrow>`: U+3000 and
    /// U+FF01...U+FFEF) map to their decomposition. Swift has no decomposition mapping, so this takes
    /// the compatibility normalization of the one code point when that is a single code point, as
    /// `precis_i18n` does. Where the real mapping is one step shorter (U+FFE3, the halfwidth Hangul
    /// letters) both results are disallowed, so the outcome is the same.
    static func widthMapped(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        guard scalar.value == 0x3000 || (0xFF01...0xFFEF).contains(scalar.value) else { return scalar }
        let mapped = String(scalar).precomposedStringWithCompatibilityMapping.unicodeScalars
        guard mapped.count == 1, let only = mapped.first else { return scalar }
        return only
    }

    /// Unicode toLowerCase (full mappings), with the one language-independent conditional mapping,
    /// Final_Sigma, which `String.lowercased()` leaves out.
    static func lowercase(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var result: [Unicode.Scalar] = []
        result.reserveCapacity(scalars.count)
        for (index, scalar) in scalars.enumerated() {
            if scalar.value == 0x03A3 {
                result.append(isFinalSigma(at: index, in: scalars) ? "\u{03C2}" : "\u{03C3}")
            } else if scalar.properties.changesWhenLowercased {
                result.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return result
    }

    /// Final_Sigma (Unicode §3.13): a cased letter before (skipping case-ignorables), none after.
    private static func isFinalSigma(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
        let before = scalars[..<index].last { !$0.properties.isCaseIgnorable }
        let after = scalars[(index + 1)...].first { !$0.properties.isCaseIgnorable }
        return (before?.properties.isCased ?? false) && !(after?.properties.isCased ?? false)
    }

    // MARK: Scripts (UTS #39 §5.2, through ICU)

    /// Step 8, on the enforced form.
    static func checkScripts(_ string: String, _ scalars: [Unicode.Scalar]) throws(UsernameError) {
        switch SpoofChecker.shared.restrictionFinding(string) {
        case nil:
            return
        case .mixedNumbers:
            let zero = { (scalar: Unicode.Scalar) in scalar.value - UInt32(scalar.properties.numericValue ?? 0) }
            let digits = scalars.filter { $0.properties.numericType == .decimal }
            let other = digits.first { zero($0) != digits.first.map(zero) }
            throw UsernameError(
                .mixedNumbers,
                "the username mixes digits of different number systems"
                    + (other.map { " (\(UsernameError.describe($0)))" } ?? ""),
                codePoint: other,
                rule: "mixed_numbers"
            )
        case .mixedScripts:
            throw mixedScripts(scalars)
        }
    }

    /// Names the scripts, most used first, and the first code point of the least used one: in
    /// `аlice` that is the Cyrillic а. A code point of several scripts (Script_Extensions) counts
    /// for one already named, if any.
    private static func mixedScripts(_ scalars: [Unicode.Scalar]) -> UsernameError {
        var names: [String] = []
        var counts: [String: Int] = [:]
        var firsts: [String: Unicode.Scalar] = [:]
        for scalar in scalars {
            let scripts = SpoofChecker.scripts(of: scalar)
            guard let script = scripts.first(where: { counts[$0] != nil }) ?? scripts.first else { continue }
            if counts[script] == nil {
                names.append(script)
                firsts[script] = scalar
            }
            counts[script, default: 0] += 1
        }
        let allowed =
            "a username is written in one script, or in Latin with Han, Hiragana and Katakana, "
            + "with Han and Bopomofo, or with Han and Hangul (UTS #39, highly restrictive)"
        guard names.count > 1 else {
            return UsernameError(.mixedScripts, "the username mixes scripts: \(allowed)", rule: "restriction_level")
        }
        let ordered = names.enumerated().sorted { (counts[$0.1]!, -$0.0) > (counts[$1.1]!, -$1.0) }.map(\.1)
        let listed = ordered.dropLast().joined(separator: ", ") + " and " + ordered.last!
        let culprit = firsts[ordered.last!]
        return UsernameError(
            .mixedScripts,
            "the username mixes scripts \(listed)\(culprit.map { " (\(UsernameError.describe($0)))" } ?? ""): \(allowed)",
            codePoint: culprit,
            rule: "restriction_level"
        )
    }
}
