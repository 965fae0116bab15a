import Foundation
import Testing

@testable import UpgradeEngine

@Suite("Username: the PRECIS UsernameCaseMapped profile")
struct UsernameTests {
    static func scalars(_ string: String) -> [UInt32] { string.unicodeScalars.map(\.value) }

    @Test(
        "look-alike spellings map to one enforced form",
        arguments: [
            ("carol", "carol"),
            ("CAROL", "carol"),
            (" carol\n", "carol"),
            ("\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}", "carol"),
            ("\u{FF23}\u{FF21}\u{FF32}\u{FF2F}\u{FF2C}", "carol"),
            ("Jos\u{E9}", "jos\u{E9}"),
            ("Jose\u{301}", "jos\u{E9}"),
            ("JOSE\u{301}", "jos\u{E9}"),
            (
                "\u{039F}\u{0394}\u{03A5}\u{03A3}\u{03A3}\u{0395}\u{03A5}\u{03A3}",
                "\u{03BF}\u{03B4}\u{03C5}\u{03C3}\u{03C3}\u{03B5}\u{03C5}\u{03C2}"
            ),
            ("\u{0130}stanbul", "i\u{307}stanbul"),
            ("STRA\u{DF}E", "stra\u{DF}e"),
            ("alice.smith+tag@example.com", "alice.smith+tag@example.com"),
            ("\u{0915}\u{094D}\u{200D}\u{0937}", "\u{0915}\u{094D}\u{200D}\u{0937}"),
            ("l\u{B7}l", "l\u{B7}l"),
            ("\u{212A}elvin", "kelvin"),  // KELVIN SIGN lowercases to k before the class is checked
            ("\u{2126}", "\u{03C9}"),  // OHM SIGN: NFC gives omega
            ("\u{1100}\u{1161}", "\u{AC00}"),  // conjoining jamo compose to a syllable
        ]
    )
    func maps(typed: String, enforced: String) throws {
        #expect(Self.scalars(try Username(typed).value) == Self.scalars(enforced))
    }

    @Test("NFC and NFD José are one username, stored as NFC")
    func normalizationForms() throws {
        let nfc = try Username("Jos\u{E9}")
        let nfd = try Username("Jose\u{301}")
        #expect(Array(nfc.value.utf8) == Array(nfd.value.utf8))
        #expect(nfd.isStored(as: "jos\u{E9}"))
        #expect(!nfd.isStored(as: "jose\u{301}"), "byte-exact: Swift's == would call these equal")
    }

    @Test(
        "invisible, direction-changing and look-alike code points are refused, naming the code point and the rule",
        arguments: [
            ("ca\u{AD}rol", 0xAD, "precis_ignorable_properties"),
            ("ca\u{2060}rol", 0x2060, "precis_ignorable_properties"),
            ("\u{FEFF}carol", 0xFEFF, "precis_ignorable_properties"),
            ("carol\u{202E}", 0x202E, "precis_ignorable_properties"),
            ("ca\u{200B}rol", 0x200B, "precis_ignorable_properties"),
            ("car\u{200D}ol", 0x200D, "zero_width_joiner"),
            ("car\u{200C}ol", 0x200C, "zero_width_nonjoiner"),
            ("carol smith", 0x20, "spaces"),
            ("carol\u{3000}smith", 0x20, "spaces"),
            ("x\u{B2}", 0xB2, "has_compat"),
            ("\u{FB01}nn", 0xFB01, "has_compat"),
            ("\u{01C6}ungla", 0x01C6, "has_compat"),
            ("\u{200B}carol", 0x200B, "precis_ignorable_properties"),
            ("a\u{7}b", 0x7, "controls"),
            ("a\u{1100}", 0x1100, "old_hangul_jamo"),
            ("carol\u{1F600}", 0x1F600, "symbols"),
            ("carol\u{2019}s", 0x2019, "punctuation"),
            ("\u{E000}", 0xE000, "other"),
            ("\u{0640}\u{0628}", 0x0640, "exceptions"),
            ("a\u{B7}l", 0xB7, "middle_dot"),
            ("a\u{30FB}b", 0x30FB, "katakana_middle_dot"),
            ("\u{0661}\u{06F2}", 0x0661, "arabic_indic"),
            ("carol\u{1CCD6}", 0x1CCD6, "unassigned"),
        ]
    )
    func refused(typed: String, codePoint: UInt32, rule: String) {
        do {
            let username = try Username(typed)
            Issue.record("accepted as \(Self.scalars(username.value))")
        } catch {
            #expect(error.codePoint?.value == codePoint)
            #expect(error.rule == rule)
            #expect(error.message.contains(UsernameError.describe(Unicode.Scalar(codePoint)!)), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test(
        "right-to-left names follow the Bidi Rule",
        arguments: [
            ("\u{05D0}\u{05D1}", true), ("\u{05D0}\u{05D1}1", true), ("1\u{05D0}", false), ("\u{05D0}a", false),
            ("a\u{05D0}", false), ("\u{0628}\u{0663}", true), ("\u{0628}\u{0663}\u{06F3}", false),
            ("\u{0627}\u{0644}\u{0639}\u{0631}\u{0628}\u{064A}\u{0629}", true), ("\u{05D0}\u{05B4}", true),
        ]
    )
    func bidi(typed: String, accepted: Bool) {
        do {
            _ = try Username(typed)
            #expect(accepted)
        } catch {
            #expect(!accepted)
            #expect(error.code == .bidiRule || error.code == .contextRule, "\(error)")
        }
    }

    // MARK: Scripts and skeletons (UTS #39, through ICU)

    @Test(
        "a name mixing scripts beyond the highly restrictive level is refused, naming the scripts and the odd code point",
        arguments: [
            ("\u{430}lice", "Latin and Cyrillic", 0x430),
            ("alic\u{435}", "Latin and Cyrillic", 0x435),
            ("p\u{430}yp\u{430}l", "Latin and Cyrillic", 0x430),
            ("\u{3C9}mega", "Latin and Greek", 0x3C9),
            ("\u{438}\u{432}\u{430}n", "Cyrillic and Latin", 0x6E),
            ("\u{5D0}\u{5D1}\u{627}", "Hebrew and Arabic", 0x627),
            ("\u{D55C}\u{3042}", "Hangul and Hiragana", 0x3042),
        ]
    )
    func mixedScripts(typed: String, scripts: String, codePoint: UInt32) {
        do {
            let username = try Username(typed)
            Issue.record("accepted as \(Self.scalars(username.value))")
        } catch {
            #expect(error.code == .mixedScripts)
            #expect(error.rule == "restriction_level")
            #expect(error.codePoint?.value == codePoint)
            #expect(error.message.contains("mixes scripts \(scripts) ("), "\(error.message)")
            #expect(error.message.contains(UsernameError.describe(Unicode.Scalar(codePoint)!)), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test(
        "a name in one script, or Latin with Han and kana, Han and Bopomofo or Han and Hangul, is valid; digits and ASCII punctuation are Common",
        arguments: [
            "alice", "jos\u{E9}", "\u{438}\u{432}\u{430}\u{43D}", "\u{305F}\u{306A}\u{304B}",
            "\u{3BF}\u{3B4}\u{3C5}\u{3C3}\u{3C3}\u{3B5}\u{3C5}\u{3C2}", "\u{5D0}\u{5D1}", "\u{0915}\u{093E}\u{0932}",
            "\u{6771}\u{4EAC}\u{30BF}\u{30EF}\u{30FC}", "tokyo\u{6771}\u{4EAC}\u{3068}\u{30BF}\u{30EF}\u{30FC}",
            "\u{D55C}\u{AD6D}abc", "\u{D55C}\u{570B}", "\u{4E2D}\u{6587}\u{3105}", "\u{438}\u{432}\u{430}\u{43D}.2000",
            "\u{305F}\u{306A}\u{304B}_01", "\u{3C9}\u{3BC}-42.!#@", "\u{0915}\u{094D}\u{200D}\u{0937}",
        ]
    )
    func singleScript(typed: String) throws {
        _ = try Username(typed)
    }

    @Test("digits of two number systems are refused, naming the second")
    func mixedNumbers() {
        // Devanagari letters with an ASCII one and a Devanagari one: one script, two digit systems.
        do {
            _ = try Username("\u{0915}1\u{0967}")
            Issue.record("accepted")
        } catch {
            #expect(error.code == .mixedNumbers)
            #expect(error.codePoint?.value == 0x967, "\(error.message)")
            #expect(error.message.hasPrefix("the username mixes digits of different number systems (U+0967"))
        }
    }

    @Test(
        "look-alikes in one script share a confusable skeleton; different names do not",
        arguments: [
            ("\u{251}lice", "alice", true),  // LATIN SMALL LETTER ALPHA
            ("\u{430}\u{441}\u{435}", "ace", true),  // Cyrillic, whole-script look-alike
            ("user1", "userl", true),
            ("rn", "m", true),
            ("jos\u{E9}", "jose\u{301}", true),
            ("alice", "bob", false),
            ("alice", "alice2", false),
        ]
    )
    func skeletons(first: String, second: String, equal: Bool) {
        #expect((Username.skeleton(ofStored: first) == Username.skeleton(ofStored: second)) == equal)
    }

    @Test("the skeleton of a username is its enforced form's")
    func skeletonOfEnforced() throws {
        #expect(try Username("\u{251}LICE").skeleton == Username.skeleton(ofStored: "alice"))
        #expect(SpoofChecker.dataVersion.hasPrefix("ICU "), "\(SpoofChecker.dataVersion)")
    }

    @Test("empty, blank and over-long names are refused")
    func limits() {
        for blank in ["", "   ", "\n\t"] {
            #expect(throws: UsernameError.self) { try Username(blank) }
        }
        #expect(throws: UsernameError.self) { try Username(String(repeating: "a", count: 257)) }
        #expect((try? Username(String(repeating: "a", count: 256))) != nil)
        // 128 two-byte letters fit as typed; lowercasing İ adds a byte each.
        #expect(throws: UsernameError.self) { try Username(String(repeating: "\u{130}", count: 128)) }
    }

    // MARK: Against precis_i18n (Tests/Fixtures/usernames)

    struct ProfileCase: Decodable {
        let input: String
        let output: String?
        let error: String?
    }

    /// The PRECIS steps (1–7) alone: step 8, the UTS #39 script rule, is not PRECIS's and refuses
    /// many of the fixture's generated strings, which mix scripts at random.
    @Test("every fixture string is enforced as precis_i18n enforces it")
    func profileFixture() throws {
        struct File: Decodable { let cases: [ProfileCase] }
        let cases = try Fixtures.json(File.self, "usernames/profile.json").cases
        #expect(cases.count > 1000)
        var mismatches: [String] = []
        for fixture in cases {
            let ours = Result { () throws(UsernameError) in try Username.precisEnforced(fixture.input).0 }
            switch (ours, fixture.output) {
            case (.success(let username), let expected?):
                if Self.scalars(username) != Self.scalars(expected) {
                    mismatches.append("\(Self.scalars(fixture.input)): \(Self.scalars(username))")
                }
            case (.failure(let error), nil):
                // precis_i18n applies the Bidi Rule before the class, this applies it after; where
                // both refuse for a class reason they must name the same rule.
                if error.code != .bidiRule, fixture.error != "bidi_rule", error.rule != fixture.error {
                    mismatches.append("\(Self.scalars(fixture.input)): \(error.rule ?? "") vs \(fixture.error ?? "")")
                }
            case (.failure(let error), _?) where error.rule == "zero_width_nonjoiner":
                // The one deliberate difference: a non-joiner in an Arabic-script joining context
                // (RFC 5892 A.1, needs Joining_Type) is refused here.
                continue
            case (.failure(let error), _?):
                mismatches.append("\(Self.scalars(fixture.input)) refused: \(error)")
            case (.success(let username), nil):
                mismatches.append("\(Self.scalars(fixture.input)) accepted as \(Self.scalars(username))")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(20))")
    }

    struct CodePoints: Decodable {
        let unicodeVersion: String
        /// [start, end, property, rule, bidi class or null, script or null]
        let runs: [[Run]]
        let width: [[UInt32]]

        enum Run: Decodable {
            case number(UInt32)
            case text(String?)
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let number = try? container.decode(UInt32.self) {
                    self = .number(number)
                } else {
                    self = .text(try container.decode(String?.self))
                }
            }
            var number: UInt32 { if case .number(let value) = self { value } else { 0 } }
            var text: String? { if case .text(let value) = self { value } else { nil } }
        }
    }

    /// Every scalar the fixture covers that our tables consider, with its fixture values.
    static func eachCodePoint(
        _ body: (Unicode.Scalar, _ property: String, _ rule: String, _ bidi: String?, _ script: String?) -> Void
    ) throws {
        let file = try Fixtures.json(CodePoints.self, "usernames/code_points.json")
        for run in file.runs {
            for value in run[0].number...run[1].number {
                guard let scalar = Unicode.Scalar(value), let age = scalar.properties.age,
                    (age.major, age.minor) <= PRECISIdentifierClass.unicodeVersion
                else { continue }
                body(scalar, run[2].text ?? "", run[3].text ?? "", run[4].text, run[5].text)
            }
        }
    }

    @Test("the derived property of every code point matches precis_i18n's, rule for rule")
    func derivedProperties() throws {
        var mismatches: [String] = []
        var compared = 0
        try Self.eachCodePoint { scalar, property, rule, _, _ in
            compared += 1
            let ours: String
            switch PRECISIdentifierClass.property(scalar) {
            case .pvalid: ours = "PVALID"
            case .contextJ: ours = "CONTEXTJ"
            case .contextO: ours = "CONTEXTO"
            case .unassigned: ours = "UNASSIGNED/unassigned"
            case .disallowed(let rule): ours = "DISALLOWED/\(rule)"
            }
            let theirs = property == "DISALLOWED" || property == "UNASSIGNED" ? "\(property)/\(rule)" : property
            if ours != theirs { mismatches.append("U+\(String(scalar.value, radix: 16)): \(ours) vs \(theirs)") }
        }
        #expect(compared > 280_000)
        #expect(mismatches.isEmpty, "\(mismatches.count): \(mismatches.prefix(20))")
    }

    @Test("code points newer than the normalization data are unassigned, whatever the standard library knows")
    func newerCodePoints() throws {
        // U+1CCD6 (Unicode 16) has a compatibility decomposition Foundation's tables do not know yet.
        let scalar = try #require(Unicode.Scalar(0x1CCD6))
        #expect(PRECISIdentifierClass.property(scalar) == .unassigned)
    }

    @Test("the Bidi_Class and script derivations are exact for every code point the class allows")
    func bidiClassesAndScripts() throws {
        let names: [BidiRule.BidiClass: String] = [
            .l: "L", .r: "R", .al: "AL", .en: "EN", .an: "AN", .es: "ES", .cs: "CS", .et: "ET", .on: "ON", .bn: "BN",
            .nsm: "NSM",
        ]
        var mismatches: [String] = []
        try Self.eachCodePoint { scalar, _, _, bidi, script in
            guard let bidi else { return }
            let hex = String(scalar.value, radix: 16)
            if names[BidiRule.bidiClass(scalar)] != bidi { mismatches.append("U+\(hex) bidi \(bidi)") }
            let ours =
                PRECISIdentifierClass.isGreek(scalar)
                ? "greek"
                : PRECISIdentifierClass.isHebrew(scalar)
                    ? "hebrew" : PRECISIdentifierClass.isHiraganaKatakanaHan(scalar) ? "hiraganaKatakanaHan" : nil
            if ours != script { mismatches.append("U+\(hex) script \(script ?? "none") vs \(ours ?? "none")") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count): \(mismatches.prefix(20))")
    }

    @Test("width mapping: each fullwidth and halfwidth code point maps to its decomposition, or both are refused")
    func widthMapping() throws {
        let file = try Fixtures.json(CodePoints.self, "usernames/code_points.json")
        #expect(file.width.count > 200)
        for pair in file.width {
            let scalar = try #require(Unicode.Scalar(pair[0]))
            let decomposition = try #require(Unicode.Scalar(pair[1]))
            let ours = Username.widthMapped(scalar)
            if ours != decomposition {
                // U+FFE3 and the halfwidth Hangul letters: compatibility normalization goes one step
                // further, or not at all; the class refuses what either way gives.
                #expect(PRECISIdentifierClass.property(ours) != .pvalid, "U+\(String(pair[0], radix: 16))")
                #expect(PRECISIdentifierClass.property(decomposition) != .pvalid, "U+\(String(pair[0], radix: 16))")
            }
        }
    }
}
