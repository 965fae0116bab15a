// libFuzzer entry point for `Username(_:)`, the one rule every username passes through before it
// keys an account, a lookup or a lockout (docs/usernames.md), and for the confusable skeleton account
// creation compares. Compiled with the username sources and ICU (see ../run.sh). Besides "no crash,
// no memory error", it checks:
// 1. An accepted name is stable: enforcing its stored form again gives the same form, code point for
//    code point (RFC 8264 §7); it is 1 to `maxBytes` bytes of UTF-8 in Normalization Form C.
// 2. It holds no white space, control, surrogate, private-use or separator code point, and no format
//    character other than the joiners RFC 5892 allows in context (ZWNJ, ZWJ): nothing invisible, no
//    bidirectional override.
// 3. White space around a name changes nothing: " name\t" gives what "name" gives, the same form or
//    the same refusal, which also holds the visible-ASCII fast path to the full rule.
// 4. The skeleton of a name is the same each time it is asked for.

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// The code points, for messages: a fuzzer's input is rarely printable.
func spelled(_ text: String) -> String {
    text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: " ")
}

func outcome(_ typed: String) -> Result<Username, UsernameError> {
    Result { () throws(UsernameError) in try Username(typed) }
}

func checkAccepted(_ name: Username, typed: String) {
    let value = name.value
    let bytes = value.utf8.count
    require(bytes >= 1 && bytes <= Username.maxBytes, "\(bytes) bytes accepted: \(spelled(typed))")
    require(
        value.unicodeScalars.elementsEqual(value.precomposedStringWithCanonicalMapping.unicodeScalars),
        "not in NFC: \(spelled(value)) from \(spelled(typed))"
    )
    for scalar in value.unicodeScalars {
        let category = scalar.properties.generalCategory
        let invisible: Bool
        switch category {
        case .control, .surrogate, .privateUse, .spaceSeparator, .lineSeparator, .paragraphSeparator:
            invisible = true
        case .format:
            invisible = scalar.value != 0x200C && scalar.value != 0x200D
        default:
            invisible = scalar.properties.isWhitespace
        }
        require(!invisible, "U+\(String(scalar.value, radix: 16)) accepted in \(spelled(value))")
    }
    switch outcome(value) {
    case .success(let again):
        require(again.isStored(as: value), "not stable: \(spelled(value)) -> \(spelled(again.value))")
    case .failure(let error):
        require(false, "the stored form \(spelled(value)) is refused: \(error)")
    }
    require(name.skeleton.utf8.elementsEqual(name.skeleton.utf8), "two skeletons differ: \(spelled(value))")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Names arrive as JSON strings or form fields: invalid UTF-8 is repaired before here.
    let typed = String(decoding: bytes, as: UTF8.self)
    let plain = outcome(typed)
    if case .success(let name) = plain { checkAccepted(name, typed: typed) }
    _ = Username.skeleton(ofStored: typed)
    // 3. The same name with white space around it, while that still fits the limit on the typed name.
    guard typed.utf8.count + 2 <= Username.maxBytes else { return 0 }
    switch (plain, outcome(" " + typed + "\t")) {
    case (.success(let name), .success(let padded)):
        require(padded.isStored(as: name.value), "white space around changes \(spelled(typed))")
    case (.failure(let error), .failure(let padded)):
        require(error.code == padded.code, "white space around changes the refusal of \(spelled(typed))")
    case (.success, .failure(let error)):
        require(false, "refused with white space around (\(error)): \(spelled(typed))")
    case (.failure(let error), .success):
        require(false, "accepted only with white space around (\(error)): \(spelled(typed))")
    }
    return 0
}
