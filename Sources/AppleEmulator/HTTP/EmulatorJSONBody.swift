import HTTPCore
import UpgradeAPI
import UpgradeEngine

/// The JSON object of a request to an emulator-only endpoint, read strictly: the media type must
/// be `application/json`, members must have the documented types, and unknown members are
/// refused so a misspelt option is not silently ignored. Problems are RFC 9457 documents, never
/// Apple's `{"error": …}` shape.
struct EmulatorJSONBody {
    private let members: [JSONValue.Member]

    init(_ request: HTTPRequest, allowed: Set<String>) throws(HTTPProblem) {
        guard !request.body.isEmpty else {
            members = []
            return
        }
        // The same rule as the REST API's bodies: JSON in UTF-8.
        guard JSONBody.isJSON(contentType: request.headers["Content-Type"]) else {
            throw HTTPProblem(
                status: 415,
                slug: "emulator-unsupported-media-type",
                title: "Emulator: JSON expected",
                detail: "Emulator endpoints take application/json bodies in UTF-8."
            )
        }
        guard let json = try? JSONValue.parse(request.body), let members = json.members else {
            throw Self.invalid("The body is not a JSON object (or repeats a member).")
        }
        if let unknown = members.first(where: { !allowed.contains($0.key) }) {
            throw Self.invalid(
                "Unknown member \(unknown.key.debugDescription); allowed: \(allowed.sorted().joined(separator: ", "))."
            )
        }
        self.members = members
    }

    private func value(_ name: String) -> JSONValue? {
        members.first { $0.key == name }?.value
    }

    func string(_ name: String) throws(HTTPProblem) -> String {
        guard let value = try optionalString(name) else { throw Self.invalid("Member \(name) is required.") }
        return value
    }

    func optionalString(_ name: String) throws(HTTPProblem) -> String? {
        switch value(name) {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw Self.invalid("Member \(name) must be a string.")
        }
    }

    func optionalInteger(_ name: String) throws(HTTPProblem) -> Int64? {
        switch value(name) {
        case nil, .null?: return nil
        case .integer(let number)?: return number
        default: throw Self.invalid("Member \(name) must be an integer.")
        }
    }

    func integers(_ name: String) throws(HTTPProblem) -> [Int64] {
        guard case .array(let items)? = value(name) else { throw Self.invalid("Member \(name) must be an array.") }
        var numbers: [Int64] = []
        for item in items {
            guard case .integer(let number) = item else { throw Self.invalid("Member \(name) must hold integers.") }
            numbers.append(number)
        }
        return numbers
    }

    func bool(_ name: String) throws(HTTPProblem) -> Bool {
        guard case .bool(let flag)? = value(name) else { throw Self.invalid("Member \(name) must be true or false.") }
        return flag
    }

    func optionalBool(_ name: String) throws(HTTPProblem) -> Bool? {
        switch value(name) {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        default: throw Self.invalid("Member \(name) must be true or false.")
        }
    }

    static func invalid(_ detail: String) -> HTTPProblem {
        HTTPProblem(status: 400, slug: "emulator-invalid-request", title: "Emulator: invalid request", detail: detail)
    }
}
