import Testing

/// A malformed request and the answer it must get; shown in test output by name only.
struct MalformedShape: Sendable, CustomTestStringConvertible {
    let name: String
    let request: String
    let status: Int
    let slug: String

    init(_ name: String, _ request: String, _ status: Int, _ slug: String) {
        self.name = name
        self.request = request
        self.status = status
        self.slug = slug
    }

    var testDescription: String { name }
}
