/// Matches a method and path to an operation. Patterns are fixed segments and `{name}` captures;
/// the pattern string doubles as the `route` label in metrics and logs (bounded cardinality). A
/// HEAD request matches its path's GET route.
///
/// A path is matched as bytes: it is split once into segment ranges, and each route compares its
/// fixed segments byte for byte (a path is bytes, not text to compare as Unicode), so routes that
/// do not match cost no captures and no strings.
struct Router<Operation: Sendable>: Sendable {
    enum Segment: Sendable {
        case fixed([UInt8])
        /// `text`: the capture holds a name typed by a person (a username), not an identifier we issued.
        case capture(String, text: Bool)
    }

    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let operation: Operation
    }

    enum Match {
        case found(Route, parameters: [String: String])
        /// The path exists with other methods.
        case methodNotAllowed(allowed: [String], pattern: String)
        case notFound
    }

    private(set) var routes: [Route] = []
    /// Captures (by name) that take any path-segment text (RFC 3986 `pchar`, percent-encoded as
    /// needed, up to `maxTextCaptureBytes`) rather than identifier bytes. The router decodes them
    /// (`PercentEncoding`), once for every route; one that is not percent-encoded UTF-8 is left out
    /// of the parameters, for the handler to refuse after its other checks.
    let textCaptures: Set<String>
    /// A username of the 256 characters the API documents, each up to four UTF-8 bytes written as
    /// three-character percent-encodings: longer than that names no resource; shorter, the handler
    /// decides (a username over its own limit is `422 validation`, not an unrouted `404`).
    static var maxTextCaptureBytes: Int { 256 * 4 * 3 }

    init(textCaptures: Set<String> = []) { self.textCaptures = textCaptures }

    mutating func add(_ method: String, _ pattern: String, _ operation: Operation) {
        let bytes = Array(pattern.utf8)
        let segments = Self.split(bytes[...]).map { range -> Segment in
            let segment = bytes[range]
            if segment.first == UInt8(ascii: "{"), segment.last == UInt8(ascii: "}"), segment.count >= 2 {
                let name = String(decoding: segment.dropFirst().dropLast(), as: UTF8.self)
                return .capture(name, text: textCaptures.contains(name))
            }
            return .fixed(Array(segment))
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, operation: operation))
    }

    func match(method: String, path: Substring) -> Match {
        var path = path
        return path.withUTF8 { bytes in match(method: method, bytes: bytes) }
    }

    private func match(method: String, bytes: UnsafeBufferPointer<UInt8>) -> Match {
        let segments = Self.split(bytes[...])
        var allowed: [String] = []
        var allowedPattern = ""
        for route in routes where Self.fits(route.segments, segments, bytes) {
            // HEAD is GET without the body (RFC 9110 §9.3.2), which the server leaves out.
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(route, parameters: Self.captures(route.segments, segments, bytes))
            }
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
            allowedPattern = route.pattern
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed, pattern: allowedPattern)
    }

    /// The ranges of the segments after the leading `/` (empty segments kept, so `/a//b` and `/a/`
    /// match no pattern); none for a path that does not start with `/`, which matches nothing.
    private static func split<Bytes: RandomAccessCollection<UInt8>>(_ path: Bytes) -> [Range<Bytes.Index>] {
        var ranges: [Range<Bytes.Index>] = []
        guard path.first == UInt8(ascii: "/") else { return [] }
        var start = path.index(after: path.startIndex)
        var index = start
        while index < path.endIndex {
            if path[index] == UInt8(ascii: "/") {
                ranges.append(start..<index)
                start = path.index(after: index)
            }
            index = path.index(after: index)
        }
        ranges.append(start..<path.endIndex)
        return ranges
    }

    /// Whether the path has the route's shape: as many segments, equal fixed segments, and
    /// identifier bytes only in captures.
    private static func fits(
        _ pattern: [Segment],
        _ path: [Range<Int>],
        _ bytes: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        guard pattern.count == path.count else { return false }
        for (expected, range) in zip(pattern, path) {
            guard case .fixed(let fixed) = expected else { continue }
            guard fixed.count == range.count, fixed.elementsEqual(bytes[range]) else { return false }
        }
        for (expected, range) in zip(pattern, path) {
            guard case .capture(_, let text) = expected else { continue }
            if text {
                guard !range.isEmpty, range.count <= Self.maxTextCaptureBytes,
                    bytes[range].allSatisfy({ Self.isPathTextByte($0) })
                else { return false }
                continue
            }
            // Identifiers we issue are base64url; anything else cannot name a resource of ours.
            guard !range.isEmpty, range.count <= 64, bytes[range].allSatisfy({ Self.isIdentifierByte($0) }) else {
                return false
            }
        }
        return true
    }

    private static func captures(
        _ pattern: [Segment],
        _ path: [Range<Int>],
        _ bytes: UnsafeBufferPointer<UInt8>
    ) -> [String: String] {
        var parameters: [String: String] = [:]
        for (expected, range) in zip(pattern, path) {
            guard case .capture(let name, let text) = expected else { continue }
            let raw = String(decoding: bytes[range], as: UTF8.self)
            parameters[name] = text ? PercentEncoding.decoded(Substring(raw)) : raw
        }
        return parameters
    }

    /// RFC 3986 `pchar`: unreserved, `%` (of a percent-encoding), sub-delims, `:` and `@`.
    private static func isPathTextByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "~"), UInt8(ascii: "%"), UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"):
            return true
        default:
            return isIdentifierByte(byte)
        }
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
