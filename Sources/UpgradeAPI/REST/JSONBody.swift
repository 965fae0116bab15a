import Foundation
import UpgradeEngine

/// A request body read strictly: `Content-Type: application/json`, one JSON object (duplicate member
/// names refused by the parser), only the fields the operation knows, each of the expected type.
///
/// Bodies have a handful of fields, so the allowed names are a list and members are looked up by
/// comparing names in order: no set or dictionary is built per request.
package struct JSONBody {
    private let members: [JSONValue.Member]

    /// Whether the media type (before any `;` parameters, spaces and tabs around it ignored, any
    /// case) is `application/json`, and a `charset` parameter, if any, names UTF-8 (in any case,
    /// quoted or not): the body is parsed as UTF-8, so a body announced in another charset is refused
    /// rather than misread. Other parameters are ignored, as RFC 8259 defines none; one that is not
    /// `name=value` is refused.
    package static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let parts = contentType.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
        // Letters compare with their lowercase bit (0x20) set on the received byte; '/' and '-' exactly.
        guard let mediaType = parts.first, equalsIgnoringCase(trimmed(mediaType), "application/json") else {
            return false
        }
        for parameter in parts.dropFirst() {
            let parameter = trimmed(parameter)
            if parameter.isEmpty { continue }
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")) else { return false }
            guard equalsIgnoringCase(parameter[..<equals], "charset") else { continue }
            var value = parameter[parameter.index(after: equals)...]
            if value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") {
                value = value.dropFirst().dropLast()
            }
            guard equalsIgnoringCase(value, "utf-8") else { return false }
        }
        return true
    }

    private static func trimmed(_ bytes: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        var bytes = bytes
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        return bytes
    }

    /// `received` equals the lowercase ASCII `expected`, letters in any case.
    private static func equalsIgnoringCase(_ received: Substring.UTF8View.SubSequence, _ expected: String) -> Bool {
        received.count == expected.utf8.count
            && zip(received, expected.utf8).allSatisfy { received, expected in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(expected)
                    ? received | 0x20 == expected : received == expected
            }
    }

    /// `allowed` nil: the service checks the member names itself (provisioning's refusals name the
    /// field first, as an import's report does).
    init(_ request: HTTPRequest, allowed: [String]?) throws(APIProblem) {
        guard Self.isJSON(contentType: request.headers["Content-Type"]) else {
            throw APIProblem(
                status: 415,
                slug: "unsupported-media-type",
                detail: "send the body as application/json in UTF-8 (a charset parameter, if any, must be utf-8)",
                extensions: [.init("result", .string("failure"))]
            )
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(request.body)
        } catch {
            throw APIProblem(
                status: 400,
                slug: "bad-request",
                detail: "the body is not valid JSON: \(error.description)",
                extensions: [.init("result", .string("failure"))]
            )
        }
        guard let object = parsed.members else { throw APIProblem.validation("the body must be a JSON object") }
        // The parser refuses repeated names, so each allowed name appears at most once.
        if let allowed, let unknown = object.first(where: { !allowed.contains($0.key) }) {
            throw APIProblem.validation(
                "unknown field '\(Self.printable(unknown.key))'; expected \(allowed.sorted().joined(separator: ", "))"
            )
        }
        self.members = object
    }

    /// A string field; `nil` when absent or null and not required.
    func string(_ name: String, required: Bool = false) throws(APIProblem) -> String? {
        guard let value = value(name), value != .null else {
            if required { throw APIProblem.validation("field '\(name)' is required") }
            return nil
        }
        guard let string = value.stringValue else { throw APIProblem.validation("field '\(name)' must be a string") }
        return string
    }

    /// A boolean field; `nil` when absent or null.
    func bool(_ name: String) throws(APIProblem) -> Bool? {
        guard let value = value(name), value != .null else { return nil }
        guard let bool = value.boolValue else { throw APIProblem.validation("field '\(name)' must be true or false") }
        return bool
    }

    /// An object field of string members, e.g. `fullName`: `nil` when absent or null; only the
    /// `allowed` member names (others refused, named as `name.member`); a null member is left out.
    func stringMembers(_ name: String, allowed: [String]) throws(APIProblem) -> [String: String]? {
        guard let value = value(name), value != .null else { return nil }
        guard let members = value.members else {
            throw APIProblem.validation("field '\(name)' must be an object or null")
        }
        var strings: [String: String] = [:]
        for member in members {
            guard allowed.contains(member.key) else {
                throw APIProblem.validation(
                    "unknown field '\(name).\(Self.printable(member.key))'; expected \(allowed.joined(separator: ", "))"
                )
            }
            switch member.value {
            case .null: continue
            case .string(let string): strings[member.key] = string
            default: throw APIProblem.validation("field '\(name).\(member.key)' must be a string or null")
            }
        }
        return strings
    }

    func requiredString(_ name: String) throws(APIProblem) -> String {
        try string(name, required: true) ?? ""
    }

    func value(_ name: String) -> JSONValue? { members.first { $0.key == name }?.value }

    /// The whole body, for an engine call that reads its fields itself (a provisioning row).
    var object: JSONValue { .object(members) }

    /// Field names are echoed in errors; keep them short and printable.
    static func printable(_ text: String) -> String {
        let cleaned = text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f }.prefix(40)
        return String(String.UnicodeScalarView(cleaned))
    }
}
