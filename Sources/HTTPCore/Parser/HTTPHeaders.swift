/// Header fields in the order they were received (or will be sent), with case-insensitive lookup.
/// Order and duplicates are kept because both carry meaning (e.g. two `Host` lines are an error).
public struct HTTPHeaders: Hashable, Sendable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [HTTPField]

    public init(_ fields: [HTTPField] = []) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { HTTPField(name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> HTTPField { fields[position] }

    /// The value of the first field with this name, if any.
    public subscript(name: String) -> String? {
        fields.first { $0.hasName(name) }?.value
    }

    /// Every value of the fields with this name, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.hasName(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { $0.hasName(name) }
    }

    /// Whether a comma-separated list field (such as `Connection`) holds `token`, ignoring case.
    public func containsToken(_ token: String, inField name: String) -> Bool {
        for field in fields where field.hasName(name) {
            for var element in field.value.split(separator: ",", omittingEmptySubsequences: true) {
                while element.first == " " || element.first == "\t" { element = element.dropFirst() }
                while element.last == " " || element.last == "\t" { element = element.dropLast() }
                if HTTPField.equalsIgnoringASCIICase(String(element), token) { return true }
            }
        }
        return false
    }

    public mutating func append(name: String, value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    /// Removes every field with this name, then appends one with `value`.
    public mutating func replaceOrAppend(name: String, value: String) {
        remove(name: name)
        append(name: name, value: value)
    }

    public mutating func remove(name: String) {
        fields.removeAll { $0.hasName(name) }
    }
}
