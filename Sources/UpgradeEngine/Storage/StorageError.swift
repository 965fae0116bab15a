/// A storage failure. Messages name tables, constraints and codes, never bound values (which may be secrets).
public struct StorageError: Error, Sendable, CustomStringConvertible, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String {
            case uniqueViolation, versionConflict, notFound, busy, migration, configuration, io, constraint
        }
        private let kind: Kind
        public var description: String { kind.rawValue }

        /// A UNIQUE or PRIMARY KEY constraint refused the write (for example an Apple `sub` linked twice).
        public static let uniqueViolation = Code(kind: .uniqueViolation)
        /// An optimistic-concurrency update found a newer version than the one it read.
        public static let versionConflict = Code(kind: .versionConflict)
        public static let notFound = Code(kind: .notFound)
        /// The database stayed locked past the busy timeout.
        public static let busy = Code(kind: .busy)
        public static let migration = Code(kind: .migration)
        public static let configuration = Code(kind: .configuration)
        public static let io = Code(kind: .io)
        /// Another constraint (CHECK, FOREIGN KEY, NOT NULL, an append-only trigger) refused the write.
        public static let constraint = Code(kind: .constraint)
    }

    public let code: Code
    public let message: String
    /// For unique violations, the column(s) named by the database, e.g. `apple_links.sub`.
    public let constraint: String?

    public init(_ code: Code, _ message: String, constraint: String? = nil) {
        self.code = code
        self.message = message
        self.constraint = constraint
    }

    public var description: String { "storage \(code): \(message)" }
}
