/// Why a compact JWS could not be split or decoded. The message names the part and the problem,
/// never the token's content.
public struct JWSError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
