import Foundation
import Synchronization
import UpgradeEngine

/// Structured logs: one JSON object per line. Callers pass only non-secret facts (route patterns,
/// statuses, problem slugs, request ids); bodies, headers and query strings are never logged.
public final class RequestLog: Sendable {
    private let write: @Sendable (String) -> Void
    private let lock = Mutex(())

    /// Logs to standard error by default.
    public init(
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) {
        self.write = write
    }

    public func log(_ level: String, _ message: String, _ fields: [(String, JWSJSON)] = []) {
        var members: [JWSJSON.Member] = [
            .init("ts", .string(Self.timestamp())), .init("level", .string(level)), .init("msg", .string(message)),
        ]
        members += fields.map { JWSJSON.Member($0.0, $0.1) }
        let line = JWSJSON.object(members).serializedString
        lock.withLock { _ in write(line) }
    }

    static func timestamp() -> String {
        let now = Date()
        return now.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
        )
    }
}
