import Synchronization

/// A value that `SIGHUP` may replace while the server runs (README, "Reloading configuration"):
/// admin tokens, webhook secrets, the Apple key, password rules. A component reads it once per
/// request or pass (`current`) and uses that snapshot to the end, so a request in flight finishes
/// under the configuration it started with; a reload replaces the whole value at once (`replace`).
public final class Reloadable<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    public init(_ value: Value) { self.value = Mutex(value) }

    /// The value now: read it once and keep it for the rest of the request.
    public var current: Value { value.withLock { $0 } }

    public func replace(with newValue: Value) { value.withLock { $0 = newValue } }
}
