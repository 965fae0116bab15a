import Foundation
import Testing

@testable import UpgradeEngine

/// The strict JSON reader that identity-token headers, claims and JWK sets go through.
@Suite("Identity token JSON")
struct IdentityTokenJSONTests {
    static func parse(_ text: String) throws -> JSONValue {
        try JSONValue.parse(Array(text.utf8))
    }

    @Test("values")
    func values() throws {
        #expect(
            try Self.parse(#" {"a" : [1, -2, 3.5, 1e3, true, false, null, "x"]} "#)
                == .object([
                    "a": .array([
                        .integer(1), .integer(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null,
                        .string("x"),
                    ])
                ])
        )
        #expect(try Self.parse("-9223372036854775808") == .integer(.min))
        #expect(try Self.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try Self.parse("0") == .integer(0))
        #expect(try Self.parse("-0") == .integer(0))
        #expect(try Self.parse(#""\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#) == .string("\"\\/\u{8}\u{c}\n\r\té😀"))
        #expect(try Self.parse(#""é""#) == .string("é"))
        #expect(try Self.parse("{}") == .object([]))
        #expect(try Self.parse("[]") == .array([]))
    }

    @Test(
        "refusals",
        arguments: [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "1e", "+1", "-", "NaN",
            "tru", "nul", "\"abc", "\"a\u{1}b\"", "\"\u{1f}\"", "\"\\n\u{1}\"", "\"é\u{0}\"", "\"\\x\"", "\"\\u12\"",
            "\"\\ud800\"", "\"\\udc00\"",
            "\"\\ud800\\u0041\"", "{\"a\":1,\"a\":2}", "1 2", "[1]x", "1e999",
            String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
        ]
    )
    func refusals(text: String) {
        #expect(throws: JSONValueError.self, "\(text.debugDescription)") { try Self.parse(text) }
    }

    @Test("a repeated member name is refused wherever it falls, in small objects and in large ones")
    func duplicateNames() throws {
        func object(_ names: [String]) -> String {
            "{" + names.enumerated().map { "\"\($0.element)\":\($0.offset)" }.joined(separator: ",") + "}"
        }
        let limit = JSONValueReader.linearDuplicateCheckLimit
        for count in [2, 5, limit - 1, limit, limit + 1, limit + 2, 3 * limit] {
            let names = (0..<count).map { "k\($0)" }
            let parsed = try Self.parse(object(names))
            #expect(parsed.members?.map(\.key) == names)
            // The last name repeated, the first, and one from the middle, appended at the end.
            for repeated in Set([names[0], names[count / 2], names[count - 1]]) {
                #expect(throws: JSONValueError.self, "\(count) members, \(repeated) twice") {
                    try Self.parse(object(names + [repeated]))
                }
            }
            // A repeat placed right after the point where a set takes over.
            if count > limit {
                var withRepeat = names
                withRepeat.insert(names[1], at: limit + 1)
                #expect(throws: JSONValueError.self) { try Self.parse(object(withRepeat)) }
            }
        }
        // An escape that spells the same name is the same name.
        #expect(throws: JSONValueError.self) { try Self.parse(#"{"ab":1,"a\u0062":2}"#) }
    }

    @Test("the eight-byte scan finds a quote, a backslash or a control byte in any position, and nothing else")
    func wordScan() {
        var generator = SystemRandomNumberGenerator()
        let boundary: (UInt8) -> Bool = { $0 == 0x22 || $0 == 0x5c || $0 < 0x20 }
        for _ in 0..<20_000 {
            var bytes = (0..<8).map { _ in UInt8.random(in: 0x20...0xff, using: &generator) }
            for index in bytes.indices where boundary(bytes[index]) { bytes[index] = 0x41 }
            // Sometimes one or two bytes of any value, at any position.
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
                bytes[Int.random(in: 0..<8, using: &generator)] = UInt8.random(in: 0...0xff, using: &generator)
            }
            let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            #expect(JSONValueReader.hasStringBoundary(word) == bytes.contains(where: boundary), "\(bytes)")
        }
        for position in 0..<8 {
            for value in 0...255 {
                var bytes = [UInt8](repeating: 0x61, count: 8)
                bytes[position] = UInt8(value)
                let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                #expect(JSONValueReader.hasStringBoundary(word) == boundary(UInt8(value)))
            }
        }
    }

    @Test("strings of every length and content read as Foundation reads them, or are refused as it refuses them")
    func stringsAgreeWithFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        let pieces: [String] = [
            "a", "Z", "0", "-", "_", ".", "é", "😀", "\\\"", "\\\\", "\\n", "\\u00e9", "\\/", " ", "~",
        ]
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...40, using: &generator)
            let body = (0..<length).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let text = "\"" + body + "\""
            let ours = try Self.parse(text).stringValue
            let reference =
                try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? String
            #expect(ours == reference, "\(text)")
        }
        // A control byte or a truncated multi-byte sequence after long plain runs, at every offset.
        for prefix in 0..<20 {
            let plain = String(repeating: "a", count: prefix)
            #expect(throws: JSONValueError.self) { try JSONValue.parse(Array(("\"" + plain + "\u{1}b\"").utf8)) }
            #expect(throws: JSONValueError.self) {
                try JSONValue.parse(Array(("\"" + plain).utf8) + [0xE2, 0x82] + Array("abcdefgh\"".utf8))
            }
            #expect(try Self.parse("\"" + plain + "\\\"x\"").stringValue == plain + "\"x")
        }
    }

    @Test("a character that needs an escape is escaped wherever it falls in a long string")
    func escapesAtEveryOffset() throws {
        for prefix in 0..<20 {
            for special in ["\"", "\\", "\n", "\u{1}", "\u{1f}", "é", "/", "\u{7f}"] {
                let value = String(repeating: "a", count: prefix) + special + String(repeating: "b", count: prefix % 9)
                let text = String(decoding: JSONValue.string(value).serialized(), as: UTF8.self)
                #expect(try Self.parse(text) == .string(value), "\(text)")
                let reference = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
                #expect(reference as? String == value, "\(text)")
            }
        }
    }

    @Test(
        "invalid UTF-8 is refused",
        arguments: [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0xE2, 0x82]]
    )
    func invalidUTF8(bytes: [UInt8]) {
        #expect(throws: JSONValueError.self) {
            try JSONValue.parse([UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")])
        }
    }

    @Test("serialization round-trips and escapes what JSON requires")
    func serialization() throws {
        let value = JSONValue.object([
            "s": .string("a\"b\\c\n\u{1}/é"), "n": .integer(-5), "d": .double(0.5), "b": .bool(true), "z": .null,
            "a": .array([.integer(1), .string("")]),
        ])
        let text = value.serializedString
        #expect(text == #"{"s":"a\"b\\c\n\u0001/é","n":-5,"d":0.5,"b":true,"z":null,"a":[1,""]}"#)
        #expect(try JSONValue.parse(value.serialized()) == value)
        #expect(JSONValue.object(["a": nil, "b": .integer(1)]).serializedString == #"{"b":1}"#)
    }
}
