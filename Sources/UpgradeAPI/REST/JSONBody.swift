import Foundation
import UpgradeEngine

/// A request body read strictly: `Content-Type: application/json`, one JSON object (duplicate member
/// names refused by the parser), only the fields the operation knows, each of the expected type.
struct JSONBody {
    private let members: [String: JWSJSON]

    /// Whether the media type (before any `;` parameters, spaces and tabs around it ignored, any
    /// case) is `application/json`.
    static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return false }
        var mediaType = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = mediaType.first, first == 0x20 || first == 0x09 { mediaType = mediaType.dropFirst() }
        while let last = mediaType.last, last == 0x20 || last == 0x09 { mediaType = mediaType.dropLast() }
        return mediaType.count == 16 && String(decoding: mediaType, as: UTF8.self).lowercased() == "application/json"
    }

    init(_ request: HTTPRequest, allowed: Set<String>) throws(APIProblem) {
        guard Self.isJSON(contentType: request.headers["Content-Type"]) else {
            throw APIProblem(
                status: 415,
                slug: "unsupported-media-type",
                detail: "send the body as application/json",
                extensions: [.init("result", .string("failure"))]
            )
        }
        let parsed: JWSJSON
        do {
            parsed = try JWSJSON.parse(request.body)
        } catch {
            throw APIProblem(
                status: 400,
                slug: "bad-request",
                detail: "the body is not valid JSON: \(error.description)",
                extensions: [.init("result", .string("failure"))]
            )
        }
        guard let object = parsed.members else { throw APIProblem.validation("the body must be a JSON object") }
        var members: [String: JWSJSON] = [:]
        for member in object {
            guard allowed.contains(member.key) else {
                throw APIProblem.validation(
                    "unknown field '\(Self.printable(member.key))'; expected \(allowed.sorted().joined(separator: ", "))"
                )
            }
            members[member.key] = member.value
        }
        self.members = members
    }

    func contains(_ name: String) -> Bool { members[name] != nil && members[name] != .null }

    /// A string field; `nil` when absent or null and not required.
    func string(_ name: String, required: Bool = false) throws(APIProblem) -> String? {
        guard let value = members[name], value != .null else {
            if required { throw APIProblem.validation("field '\(name)' is required") }
            return nil
        }
        guard let string = value.stringValue else { throw APIProblem.validation("field '\(name)' must be a string") }
        return string
    }

    func requiredString(_ name: String) throws(APIProblem) -> String {
        try string(name, required: true) ?? ""
    }

    func value(_ name: String) -> JWSJSON? { members[name] }

    /// Field names are echoed in errors; keep them short and printable.
    static func printable(_ text: String) -> String {
        let cleaned = text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f }.prefix(40)
        return String(String.UnicodeScalarView(cleaned))
    }
}
