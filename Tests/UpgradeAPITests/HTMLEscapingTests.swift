import Foundation
import Testing

@testable import UpgradeAPI

/// The console's one escaping function and the `HTML` type that applies it to every interpolated
/// value: nothing a value holds can become markup, in text or in a quoted attribute.
@Suite("Console HTML escaping")
struct HTMLEscapingTests {
    @Test(
        "each character that means something in HTML becomes a character reference",
        arguments: [
            ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
            ("\"><svg onload=x>", "&quot;&gt;&lt;svg onload=x&gt;"),
            ("'onmouseover='x", "&#39;onmouseover=&#39;x"),
            ("a & b &amp; c", "a &amp; b &amp;amp; c"),
            ("plain text, ünïcödé 🍏", "plain text, ünïcödé 🍏"),
            ("nul\u{0}byte", "nul\u{FFFD}byte"),
            ("", ""),
        ]
    )
    func table(input: String, expected: String) {
        #expect(HTML.escape(input) == expected)
    }

    /// Inverts `HTML.escape` (NUL, which it replaces, aside).
    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    @Test("random strings of markup characters: no raw <, >, \" or ', every & starts a reference, and nothing is lost")
    func fuzz() {
        // A fixed seed: the same strings on every run, so a failure can be reproduced.
        var generator = SplitMix64(seed: 0x5EED_C0DE)
        let alphabet: [Character] = [
            "<", ">", "\"", "'", "&", "=", "/", ";", "#", "a", "b", " ", "\n", "\t", "é", "🍏", "\u{200B}", "\u{0}",
            "\u{FFFD}", "x", "1", "`",
        ]
        for _ in 0..<3000 {
            let length = Int(generator.next() % 40)
            let input = String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
            let escaped = HTML.escape(input)
            #expect(!escaped.contains(where: { "<>\"'\u{0}".contains($0) }), "raw markup for \(input.debugDescription)")
            var rest = Substring(escaped)
            while let ampersand = rest.firstIndex(of: "&") {
                rest = rest[ampersand...]
                let known = ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains { rest.hasPrefix($0) }
                #expect(known, "a bare & for \(input.debugDescription)")
                rest = rest.dropFirst()
            }
            let expected = input.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
            #expect(Self.unescape(escaped) == expected, "round trip of \(input.debugDescription)")
        }
    }

    @Test("an interpolated String is escaped; only HTML is spliced in as it is")
    func interpolation() {
        let value = "<b id=\"x\">'&'</b>"
        let trusted: HTML = "<em>kept</em>"
        let page: HTML = "<p title=\"\(value)\">\(value) \(trusted) \(42)</p>"
        #expect(
            page.markup
                == "<p title=\"&lt;b id=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;\">&lt;b id=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/b&gt; <em>kept</em> 42</p>"
        )
        #expect(HTML(text: value).markup == HTML.escape(value))
    }

    /// A small deterministic generator (SplitMix64), so the fuzz cases are the same on every run.
    struct SplitMix64 {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
