/// Why a client secret could not be configured or made. Messages name the offending setting and
/// what it should look like; they never contain key material.
public struct ClientSecretError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidTeamID, invalidKeyID, invalidClientID, invalidLifetime
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        public static let invalidTeamID = Code(.invalidTeamID)
        public static let invalidKeyID = Code(.invalidKeyID)
        public static let invalidClientID = Code(.invalidClientID)
        public static let invalidLifetime = Code(.invalidLifetime)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
