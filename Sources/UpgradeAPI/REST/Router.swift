/// Matches a method and path to an operation. Patterns are fixed segments and `{name}` captures;
/// the pattern string doubles as the `route` label in metrics and logs (bounded cardinality).
struct Router<Operation: Sendable>: Sendable {
    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Substring]
        let operation: Operation
    }

    enum Match {
        case found(Route, parameters: [String: String])
        /// The path exists with other methods.
        case methodNotAllowed(allowed: [String], pattern: String)
        case notFound
    }

    private(set) var routes: [Route] = []

    mutating func add(_ method: String, _ pattern: String, _ operation: Operation) {
        routes.append(
            Route(method: method, pattern: pattern, segments: Self.split(Substring(pattern)), operation: operation)
        )
    }

    func match(method: String, path: Substring) -> Match {
        let segments = Self.split(path)
        var allowed: [String] = []
        var allowedPattern = ""
        for route in routes {
            guard let parameters = Self.capture(route.segments, segments) else { continue }
            if route.method == method { return .found(route, parameters: parameters) }
            allowed.append(route.method)
            allowedPattern = route.pattern
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed, pattern: allowedPattern)
    }

    /// The segments after the leading `/`, split on the UTF-8 bytes (splitting the `Substring`
    /// itself walks grapheme clusters, which cost about 15 000 instructions per request).
    private static func split(_ path: Substring) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().map {
            Substring($0)
        }
    }

    private static func capture(_ pattern: [Substring], _ path: [Substring]) -> [String: String]? {
        guard pattern.count == path.count else { return nil }
        // Fixed segments first, byte for byte (a path is bytes, not text to compare as Unicode), so
        // the routes that do not match cost no captures.
        for (expected, actual) in zip(pattern, path) where !isCapture(expected) {
            guard expected.utf8.elementsEqual(actual.utf8) else { return nil }
        }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, path) where isCapture(expected) {
            // Identifiers we issue are base64url; anything else cannot name a resource of ours.
            guard !actual.isEmpty, actual.utf8.count <= 64,
                actual.utf8.allSatisfy({ Self.isIdentifierByte($0) })
            else { return nil }
            parameters[String(expected.dropFirst().dropLast())] = String(actual)
        }
        return parameters
    }

    private static func isCapture(_ segment: Substring) -> Bool {
        segment.utf8.first == UInt8(ascii: "{") && segment.utf8.last == UInt8(ascii: "}")
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
