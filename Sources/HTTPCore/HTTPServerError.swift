import Glibc

/// Why a server could not start. The message names what to change.
public struct HTTPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case addressInUse
            case invalidAddress
            case invalidConfiguration
            case alreadyStarted
            case system
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Another socket (possibly a stale copy of this server) holds the address.
        public static let addressInUse = Code(.addressInUse)
        public static let invalidAddress = Code(.invalidAddress)
        public static let invalidConfiguration = Code(.invalidConfiguration)
        public static let alreadyStarted = Code(.alreadyStarted)
        /// A system call failed; the message names it and the errno.
        public static let system = Code(.system)

        public var description: String {
            switch base {
            case .addressInUse: "address in use"
            case .invalidAddress: "invalid address"
            case .invalidConfiguration: "invalid configuration"
            case .alreadyStarted: "already started"
            case .system: "system call failed"
            }
        }
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    static func system(_ call: String, errno number: Int32 = errno) -> HTTPServerError {
        HTTPServerError(.system, "\(call) failed: \(String(cString: strerror(number))) (errno \(number))")
    }

    public var description: String { "\(code): \(message)" }
}
