import Testing

@testable import UpgradeEngine

/// Apple's password-rules syntax: every rule, every refusal, and random input that must never crash.
@Suite("Password rules")
struct PasswordRulesTests {
    @Test("the default parses to itself and is the documented string")
    func defaultRules() throws {
        #expect(
            PasswordRules.defaultText
                == "minlength: 12; maxlength: 64; required: lower; required: upper; required: digit; allowed: ascii-printable;"
        )
        #expect(PasswordRules.default.description == PasswordRules.defaultText)
        #expect(try PasswordRules(PasswordRules.default.description) == PasswordRules.default)
    }

    /// The shape of the strong passwords iOS generates: three groups of six lowercase letters joined by
    /// hyphens, one letter uppercase and one character a digit.
    @Test("Apple-style generated strong passwords meet the default")
    func generatedPasswords() {
        var random = SplitMix(seed: 7)
        var samples = ["abcdEf-ghijK1-lmnoPq", "xodjaw-7tuxmy-Zesgah", "nujxig-qyhbe4-Bosrag"]
        for _ in 0..<200 {
            var characters = (0..<18).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next(26)))) }
            let upper = random.next(18)
            characters[upper] = Character(characters[upper].uppercased())
            var digit = random.next(18)
            if digit == upper { digit = (digit + 1) % 18 }
            characters[digit] = Character(Unicode.Scalar(UInt8(48 + random.next(10))))
            let text = String(characters)
            samples.append(text.prefix(6) + "-" + text.dropFirst(6).prefix(6) + "-" + text.suffix(6))
        }
        for sample in samples {
            #expect(PasswordRules.default.violation(of: sample) == nil, "\(sample)")
        }
    }

    @Test(
        "each broken rule is named, and the message never quotes the password",
        arguments: [
            ("abcDEF123", "minlength: 12"),
            (String(repeating: "aB1", count: 22), "maxlength: 64"),
            ("abcdefghijk1", "required: upper"),
            ("ABCDEFGHIJK1", "required: lower"),
            ("abcdefGHIJKL", "required: digit"),
            ("abcdefGHIJK1é", "allowed: ascii-printable"),
            ("abcdef\tGHIJK1", "allowed: ascii-printable"),
        ]
    )
    func defaultViolations(password: String, rule: String) throws {
        let violation = try #require(PasswordRules.default.violation(of: password))
        #expect(violation.rule == rule)
        #expect(violation.description.hasSuffix("(\(rule))"))
        #expect(!violation.description.contains(password))
    }

    @Test("required: digit reads as the issue asks")
    func digitMessage() {
        #expect(
            PasswordRules.default.violation(of: "abcdefGHIJKL")?.description
                == "the new password must contain a digit (required: digit)"
        )
    }

    @Test("every class, custom sets, unions, max-consecutive and allowed")
    func everyRule() throws {
        let special = try PasswordRules("required: special")
        #expect(special.violation(of: "abc") != nil)
        #expect(special.violation(of: "a c") == nil, "space is special")
        #expect(special.violation(of: "a/c") == nil)

        let custom = try PasswordRules("required: [-_]; allowed: lower")
        #expect(custom.violation(of: "ab-c") == nil)
        #expect(custom.violation(of: "abc")?.rule == "required: [-_]")
        #expect(custom.violation(of: "aB-c")?.rule == "allowed: lower", "only the listed classes are allowed")

        let union = try PasswordRules("required: upper, digit")
        #expect(union.violation(of: "abc1") == nil)
        #expect(union.violation(of: "abcD") == nil)
        #expect(union.violation(of: "abc")?.message == "the new password must contain an uppercase letter or a digit")

        let bracket = try PasswordRules("required: []a]")
        #expect(bracket.violation(of: "x]") == nil)
        #expect(bracket.description == "required: []a];")
        let semicolon = try PasswordRules("required: [;]; minlength: 2")
        #expect(semicolon.minLength == 2)
        #expect(semicolon.violation(of: "a;") == nil)

        let unicode = try PasswordRules("allowed: unicode")
        #expect(unicode.violation(of: "pässwörd✓") == nil)
        #expect(
            try PasswordRules("minlength: 3; allowed: unicode").violation(of: "äöü") == nil,
            "length counts UTF-16 code units: three precomposed letters are three"
        )
        #expect(try PasswordRules("allowed: ascii-printable").violation(of: "ä")?.rule == "allowed: ascii-printable")

        let consecutive = try PasswordRules("max-consecutive: 2")
        #expect(consecutive.violation(of: "aabbaa") == nil)
        #expect(consecutive.violation(of: "abbbc")?.rule == "max-consecutive: 2")

        #expect(try PasswordRules("required: ascii-printable").violation(of: "") != nil)
        #expect(try PasswordRules("required: unicode").violation(of: "x") == nil)
    }

    @Test("allowed: unicode still refuses controls, invisible characters and passwords of only white space")
    func unicodeHoles() throws {
        let unicode = try PasswordRules("minlength: 8; allowed: unicode")
        let invisible = [
            String(repeating: "\u{200B}", count: 8),  // zero-width space
            String(repeating: "\u{200D}", count: 8),  // zero-width joiner
            String(repeating: "\u{2060}", count: 8),  // word joiner
            String(repeating: "\u{FEFF}", count: 8),  // zero-width no-break space
            String(repeating: "\u{3164}", count: 8),  // Hangul filler
            "password\u{202E}",  // right-to-left override
            "pass\u{07}word",  // a control character (bell)
            "pass\u{0}word",
            "pass\u{AD}word",  // soft hyphen
            "pass\u{E0001}word",  // language tag
            "\u{FE0F}password",  // a variation selector with nothing to select
            "pass\u{09}word",  // a tab
            "pass\u{2028}word",  // line separator
            "pass\u{FFFF}word",  // noncharacter
            "pass\u{0378}word",  // unassigned
        ]
        for password in invisible {
            #expect(unicode.violation(of: password) == .invisibleCharacter, "\(password.unicodeScalars.map(\.value))")
        }
        for blank in [
            String(repeating: " ", count: 8), String(repeating: "\u{3000}", count: 8), " \u{A0} \u{2003}    ",
        ] {
            #expect(unicode.violation(of: blank) == .onlyWhiteSpace, "\(blank.unicodeScalars.map(\.value))")
        }
        // Visible characters of any script, with spaces among them, stay valid.
        // A joiner or variation selector inside an emoji, or a combining mark, shows with its character.
        let valid = ["pässwörd", "пароль-пароль", "パスワードですよ", "correct horse", "👨‍👩‍👧‍👦 family", "a\u{301}bcdefgh", "❤️❤️❤️❤️"]
        for valid in valid {
            #expect(unicode.violation(of: valid) == nil, "\(valid)")
        }
        // The same holds whatever the rules: ascii-printable admits the space, never only it.
        #expect(try PasswordRules("minlength: 4; allowed: special").violation(of: "    ") == .onlyWhiteSpace)
        #expect(PasswordRules.default.violation(of: String(repeating: " ", count: 12)) == .onlyWhiteSpace)
        #expect(
            PasswordRules.default.violation(of: "abcD1fghijk\u{200B}")?.rule == "allowed: ascii-printable",
            "outside ascii-printable, the allowed rule answers first"
        )
    }

    @Test("rules that only a password of spaces could meet are refused")
    func onlySpaceAllowed() throws {
        for text in ["allowed: [ ]", "required: [ ]; allowed: [ ]", "minlength: 4; allowed: [ ]; required: [ ]"] {
            let error = #expect(throws: PasswordRulesError.self) { try PasswordRules(text) }
            #expect(error?.message.contains("only the space") == true, "\(text)")
        }
        #expect(try PasswordRules("allowed: [ ], lower").violation(of: "a b") == nil)
        #expect(try PasswordRules("required: [ ]").violation(of: "a b") == nil)
    }

    @Test("length counts UTF-16 code units, as Apple's tools and HTML's minlength do")
    func lengthInUTF16() throws {
        let rules = try PasswordRules("minlength: 8; maxlength: 10; allowed: unicode")
        // Four emoji outside the Basic Multilingual Plane are eight UTF-16 code units.
        #expect(rules.violation(of: "😀😀😀😀") == nil)
        #expect(rules.violation(of: "😀😀😀")?.rule == "minlength: 8")
        #expect(rules.violation(of: "😀😀😀😀😀a")?.rule == "maxlength: 10")
        // A family emoji is one grapheme, seven scalars and eleven code units.
        #expect(rules.violation(of: "👨‍👩‍👧‍👦")?.rule == "maxlength: 10")
        // Precomposed and decomposed letters count what they are made of.
        #expect(rules.violation(of: "ääää") != nil)
        #expect(rules.violation(of: "a\u{308}a\u{308}a\u{308}a\u{308}") == nil)
        // Printable ASCII, what iOS generates, counts the same in every unit.
        #expect(PasswordRules.default.violation(of: "abcdEf-ghijK1-lmnoPq") == nil)
    }

    @Test("names and classes are case-insensitive; the canonical form is lowercase and ordered")
    func canonical() throws {
        let rules = try PasswordRules(
            "  Allowed: LOWER ,[ab] ;Required:Digit; MAX-consecutive: 3; maxLength:20;MINLENGTH: 8 ;"
        )
        #expect(
            rules.description
                == "minlength: 8; maxlength: 20; required: digit; allowed: lower, [ab]; max-consecutive: 3;"
        )
        #expect(try PasswordRules(rules.description) == rules)
        #expect(try PasswordRules("required: upper; allowed: special; allowed: upper").allowed == [.special, .upper])
    }

    @Test(
        "each malformed rule string is refused with the problem named",
        arguments: [
            ("minlength 12", "no ':'"),
            ("minlength: ", "has no value"),
            ("minlength: x", "whole number"),
            ("minlength: 0", "whole number"),
            ("minlength: 1025", "whole number"),
            ("minlength: -1", "whole number"),
            ("minlength: 12; minlength: 13", "more than once"),
            ("maxlength: 4; maxlength: 5", "more than once"),
            ("max-consecutive: 2; max-consecutive: 2", "more than once"),
            ("minlength: 20; maxlength: 10", "greater than maxlength"),
            ("required: uppercase", "unknown character class"),
            ("required: upper,", "ends with ','"),
            ("required: upper,, lower", "empty class"),
            ("required: upper lower", "unknown character class"),
            ("required: [abc", "no closing"),
            ("required: [é]", "printable ASCII"),
            ("required: [abc] upper", "separate character classes"),
            ("colour: red", "unknown rule name"),
            ("minlength: 12;; maxlength: 20", "is empty"),
            (String(repeating: "required: upper; ", count: 61), "longer than 1024 bytes"),
            (String(repeating: "required:upper;", count: 65), "more than 64 rules"),
        ]
    )
    func refusals(text: String, problem: String) {
        let error = #expect(throws: PasswordRulesError.self) { try PasswordRules(text) }
        #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
    }

    @Test("random strings never crash the parser; what parses round-trips and checks random passwords")
    func fuzz() {
        var random = SplitMix(seed: 42)
        let alphabet = Array(
            "requiredallowedminlengthmaxlengthmax-consecutiveupperlowerdigitspecialunicode[]:;, -_1290é\t"
        )
        let fragments = [
            "minlength: 8", "maxlength: 40", "required: upper", "required: lower, digit", "allowed: special",
            "allowed: [-_.]", "required: []x]", "max-consecutive: 2", "allowed: unicode", "required: ascii-printable",
        ]
        var parsed = 0
        for _ in 0..<5_000 {
            let length = random.next(80)
            var text: String
            switch random.next(3) {
            case 0:
                // Well-formed rules in random case and spacing, sometimes with one character changed.
                text = (0..<(1 + random.next(5))).map { _ in fragments[random.next(fragments.count)] }.joined(
                    separator: random.next(2) == 0 ? ";" : " ; "
                )
                text = random.next(2) == 0 ? text.uppercased() : text
                if random.next(3) == 0, !text.isEmpty {
                    var scalars = Array(text.unicodeScalars)
                    scalars[random.next(scalars.count)] = Unicode.Scalar(UInt8(32 + random.next(95)))
                    text = String(String.UnicodeScalarView(scalars))
                }
            case 1:
                text = String((0..<length).map { _ in alphabet[random.next(alphabet.count)] })
            default:
                text = String(
                    String.UnicodeScalarView(
                        (0..<length).compactMap { _ in Unicode.Scalar(UInt32(random.next(0x2FF))) }
                    )
                )
            }
            guard let rules = try? PasswordRules(text) else { continue }
            parsed += 1
            #expect((try? PasswordRules(rules.description)) == rules, "\(text)")
            let password = String((0..<random.next(40)).map { _ in alphabet[random.next(alphabet.count)] })
            _ = rules.violation(of: password)
        }
        #expect(parsed > 0)
    }
}

/// A small deterministic generator, so a failing random case can be replayed.
struct SplitMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(max(1, bound)))
    }
}
