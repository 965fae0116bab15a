// libFuzzer entry point for the JSON reader (`JSONValue.parse`), compiled together with the JSON
// sources only (see ../run.sh). It reads identity tokens, request bodies and the answers of
// Apple and the legacy login system, all of them input from outside. Besides "no crash, no memory
// error", it checks for every input:
// 1. A parsed value serializes to text that parses back to the same value, and that text is a
//    fixed point (serializing it again gives the same bytes).
// 2. What it accepts, Foundation's JSONSerialization accepts too, with the same structure: the
//    same kinds, strings, numbers, member names and lengths (UTF-8 only: see `comparable`).
// 3. What it refuses and Foundation accepts is refused for one of its strict rules (duplicate
//    names, nesting, lone surrogates, numbers out of range, trailing commas), never for valid JSON
//    it should have read.

import Foundation

/// A broken invariant: `fatalError` keeps its message in optimized builds, so the fuzzer's report
/// says which property failed.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// Whether Foundation's tree `other` has the same structure and values as `value`.
func same(_ value: JSONValue, _ other: Any) -> Bool {
    switch value {
    case .null:
        return other is NSNull
    case .bool(let flag):
        return (other as? NSNumber)?.boolValue == flag
    case .integer(let integer):
        guard let number = other as? NSNumber else { return false }
        return number.int64Value == integer || close(number.doubleValue, Double(integer))
    case .double(let double):
        guard let number = other as? NSNumber else { return false }
        return close(number.doubleValue, double)
    case .string(let string):
        guard let text = other as? String else { return false }
        return Array(text.unicodeScalars) == Array(string.unicodeScalars)
    case .array(let values):
        guard let others = other as? [Any], others.count == values.count else { return false }
        return zip(values, others).allSatisfy { same($0, $1) }
    case .object(let members):
        guard let others = other as? [String: Any], others.count == members.count else { return false }
        return members.allSatisfy { member in others[member.key].map { same(member.value, $0) } ?? false }
    }
}

/// Equal to 12 significant digits: Foundation reads long numbers as `NSDecimalNumber`, whose
/// `doubleValue` can be several units in the last place away from the correctly rounded value that
/// `Double(text)` gives; a misread number would be off by far more. Below the smallest normal
/// value, both are as good as zero.
func close(_ a: Double, _ b: Double) -> Bool {
    a == b || abs(a - b) <= 1e-12 * max(abs(a), abs(b)) || max(abs(a), abs(b)) < Double.leastNormalMagnitude
}

/// The reader's refusals that a lenient parser may not share: each is a rule of ours on top of
/// RFC 8259, which lets implementations set limits and choose what to do with duplicate names.
let strictRules = [
    "duplicate member name", "nesting deeper than", "number out of range", "lone surrogate",
]

/// Whether the refusal at `offset` is of a `}` or `]` right after a comma, which Foundation takes
/// and RFC 8259 does not.
func trailingComma(_ bytes: [UInt8], at offset: Int) -> Bool {
    guard offset < bytes.count, bytes[offset] == UInt8(ascii: "}") || bytes[offset] == UInt8(ascii: "]") else {
        return false
    }
    let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
    return bytes[..<offset].last { !whitespace.contains($0) } == UInt8(ascii: ",")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Foundation guesses UTF-16 and UTF-32 from NUL bytes and skips byte order marks; RFC 8259 §8.1
    // asks for UTF-8 without a mark, and the reader takes nothing else, so such inputs are not compared.
    let marks: [[UInt8]] = [[0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE]]
    let comparable = !bytes.contains(0) && !marks.contains { bytes.starts(with: $0) }
    let foundation =
        comparable ? try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) : nil
    let value: JSONValue
    do {
        value = try JSONValue.parse(bytes)
    } catch {
        require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside the input")
        if foundation != nil {
            require(
                strictRules.contains { error.message.hasPrefix($0) } || trailingComma(bytes, at: error.offset),
                "refused what Foundation reads: \(error)"
            )
        }
        return 0
    }
    let text = value.serialized()
    let again: JSONValue
    do {
        again = try JSONValue.parse(text)
    } catch {
        fatalError("invariant broken: its own serialization does not parse: \(error)")
    }
    require(again == value, "the serialization parses to another value")
    require(again.serialized() == text, "the serialization is not a fixed point")
    require(comparable, "accepted a NUL byte or a byte order mark")
    guard let foundation else {
        fatalError("invariant broken: accepted what Foundation refuses")
    }
    require(same(value, foundation), "Foundation reads another structure")
    return 0
}
