import UpgradeEngine

/// A refused request to the emulator's own management API (adding teams, users, apps, transfers,
/// authorizations). Apple's REST endpoints answer with `AppleEndpointError` instead.
public struct AppleEmulatorError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidIdentifier, alreadyExists, unknownTeam, unknownApp, unknownUser, unknownKey, notAllowed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A team id, key id or client id that Apple would never issue.
        public static let invalidIdentifier = Code(.invalidIdentifier)
        public static let alreadyExists = Code(.alreadyExists)
        public static let unknownTeam = Code(.unknownTeam)
        public static let unknownApp = Code(.unknownApp)
        public static let unknownUser = Code(.unknownUser)
        public static let unknownKey = Code(.unknownKey)
        /// The action is not possible in the current state (deleted account, last signing key...).
        public static let notAllowed = Code(.notAllowed)

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
