/// A piece of HTML that is safe to send: markup written in this module's source, and text that went
/// through `HTML.escape`. Interpolating a `String` (or anything else that is not `HTML`) escapes it,
/// so a value from the database cannot become markup by being forgotten; only another `HTML` is
/// spliced in as it is. Every console page is built from these (docs/architecture.md, "The support
/// console").
struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The markup as it goes on the wire.
    private(set) var markup: String

    init(stringLiteral literal: String) { markup = literal }

    init(stringInterpolation: StringInterpolation) { markup = stringInterpolation.markup }

    /// Text shown as text: escaped.
    init(text: some StringProtocol) { markup = Self.escape(text) }

    static let empty: HTML = ""

    var description: String { markup }

    /// The parts one after another.
    static func joined(_ parts: some Sequence<HTML>) -> HTML {
        var html = HTML.empty
        for part in parts { html.markup += part.markup }
        return html
    }

    static func + (lhs: HTML, rhs: HTML) -> HTML {
        var html = lhs
        html.markup += rhs.markup
        return html
    }

    static func += (lhs: inout HTML, rhs: HTML) { lhs.markup += rhs.markup }

    /// The one escaping function: `&`, `<`, `>`, `"` and `'` become character references, which
    /// makes `text` inert both between tags and inside a quoted attribute value (the console quotes
    /// every attribute). Other characters, including any Unicode, pass unchanged; NUL, which HTML
    /// parsers replace or drop, becomes U+FFFD, so what is shown is what was stored, or visibly not.
    static func escape(_ text: some StringProtocol) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            case "\u{0}": escaped += "\u{FFFD}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    struct StringInterpolation: StringInterpolationProtocol {
        var markup = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            markup.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        /// The literal parts are this module's own markup.
        mutating func appendLiteral(_ literal: String) { markup += literal }

        mutating func appendInterpolation(_ html: HTML) { markup += html.markup }

        mutating func appendInterpolation(_ text: some StringProtocol) { markup += HTML.escape(text) }

        mutating func appendInterpolation(_ number: some BinaryInteger) { markup += String(number) }

        /// Anything else by its description, escaped.
        mutating func appendInterpolation(_ value: some CustomStringConvertible) {
            markup += HTML.escape(value.description)
        }
    }
}
