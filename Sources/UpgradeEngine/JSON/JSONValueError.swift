/// Why a JSON text was refused. Messages give the byte offset and what was expected, never the
/// content around it (a token's payload may hold personal data).
public struct JSONValueError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}
