// libFuzzer entry point for what reads an identity token before its signature is checked: the
// compact JWS split and its base64url decoding (`JWSCompact`, which decodes into uninitialized
// storage), the protected header (`JWSHeader`), and `Base64URL`. Compiled with those sources and
// the JSON reader only (see ../run.sh). Besides "no crash, no memory error", it checks:
// 1. A token is accepted exactly when it has three non-empty parts, each the one canonical
//    base64url spelling of some bytes, as Foundation's base64 decoder and our encoder judge it;
//    the parts decode to Foundation's bytes, and `Base64URL` agrees with `JWSCompact`.
// 2. The signing input is the text before the second dot.
// 3. A header the JSON reader reads as an object gives the same `alg`, `kid` and `typ`; one it
//    refuses is refused by `JWSHeader` too, unless for a duplicate of a member it does not act on.

import Foundation

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// Foundation's reading of unpadded base64url `text`, if `text` is its canonical spelling (empty
/// for empty text).
func canonical(_ text: Substring) -> [UInt8]? {
    guard text.utf8.allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "=") })
    else { return nil }
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
    guard let data = Data(base64Encoded: standard) else { return nil }
    let bytes = [UInt8](data)
    return Base64URL.encode(bytes) == text ? bytes : nil
}

func checkHeader(_ bytes: [UInt8]) {
    let header = try? JWSHeader(json: bytes)
    do {
        let value = try JSONValue.parse(bytes)
        guard case .object = value else {
            require(header == nil, "a header that is not an object was read")
            return
        }
        let members = ["alg", "kid", "typ"].map { value[$0] }
        let strings = members.map { $0?.stringValue }
        let usable =
            zip(members, strings).allSatisfy { $0.0 == nil || $0.1 != nil } && strings[0] != nil
            && value["crit"] == nil
        require((header != nil) == usable, "the header's acceptance differs from its JSON")
        if let header {
            require(
                header.algorithm == strings[0] && header.keyID == strings[1] && header.type == strings[2],
                "the header's members differ from its JSON"
            )
        }
    } catch {
        require(
            header == nil || error.message.hasPrefix("duplicate member name"),
            "a header the JSON reader refuses was read: \(error)"
        )
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkHeader(bytes)
    // Tokens are strings; bytes that are not UTF-8 never reach the parser as they are.
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    let limit = 4096
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    let decoded = parts.count == 3 ? parts.map(canonical) : []
    let expected =
        text.utf8.count <= limit && decoded.count == 3 && parts.allSatisfy { !$0.isEmpty }
        && decoded.allSatisfy { $0 != nil }
    for part in parts {
        require(Base64URL.decode(part) == canonical(part), "Base64URL and Foundation disagree on a part")
    }
    do {
        let token = try JWSCompact(parsing: text, maximumLength: limit)
        require(expected, "accepted a token that is not three canonical base64url parts")
        require(
            [token.header, token.payload, token.signature] == decoded.map { $0! },
            "decoded other bytes than Foundation"
        )
        require(
            Array(token.signingInput) == Array((parts[0] + "." + parts[1]).utf8),
            "the signing input is not the text before the second dot"
        )
        checkHeader(token.header)
    } catch {
        require(!expected, "refused three canonical base64url parts: \(error)")
    }
    return 0
}
