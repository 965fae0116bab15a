import Foundation

/// Which keyrings the running `serve` processes hold (docs/architecture.md §10.4, "Which keyrings
/// are running"). Each instance records the key ids of its keyring at start, on every reload and
/// every `heartbeatSeconds`, and deletes its row when it stops; `keys reseal` refuses to move values
/// under a key that a live instance cannot open, and `keys status` lists the instances.
public enum RunningKeyrings {
    /// How often a running instance says it is still there.
    public static let heartbeatSeconds: Int64 = 10
    /// An instance not seen for this long has stopped without a clean exit (killed, cut off from
    /// the database): three heartbeats missed, and a few seconds for a slow write.
    public static let liveSeconds: Int64 = 35
    /// Rows not seen for this long are deleted by any instance's heartbeat.
    public static let forgetSeconds: Int64 = 86_400

    /// The instances seen in the last `liveSeconds`.
    public static func live(store: any UpgradeStore, now: Int64) throws -> [ServeInstanceRecord] {
        try store.read { try $0.serveInstances(seenSince: now - liveSeconds) }
    }

    /// The instances whose keyring does not list `keyID`: a value sealed under it is out of their reach.
    public static func lacking(_ keyID: String, in instances: [ServeInstanceRecord]) -> [ServeInstanceRecord] {
        instances.filter { !$0.keyIDs.contains(keyID) }
    }

    /// `host pid 4242 on 127.0.0.1:8080 (keyring k2, k1; seen 3 s ago)`.
    public static func describe(_ instance: ServeInstanceRecord, now: Int64) -> String {
        "\(instance.host) pid \(instance.pid) on \(instance.listen) (keyring \(instance.keyIDs.joined(separator: ", ")); "
            + "seen \(max(0, now - instance.seenAt)) s ago)"
    }

    /// Why `keys reseal` must not run yet, or nil: the live instances that cannot open `keyID`.
    public static func resealProblem(keyID: String, instances: [ServeInstanceRecord], now: Int64) -> String? {
        let behind = lacking(keyID, in: instances)
        guard !behind.isEmpty else { return nil }
        let names = behind.map { describe($0, now: now) }.joined(separator: "; ")
        return "\(behind.count) running serve instance(s) cannot open values sealed under key \(keyID): \(names); "
            + "reload each with the new keyring (kill -HUP) and run keys reseal again "
            + "(an instance that stopped without a clean exit is forgotten \(liveSeconds) s after it was last seen)"
    }
}

/// One `serve` process's row in `serve_instances`: written at start and on each `beat()` with the
/// keyring's ids as they are then (a reload replaces them), deleted by `remove()` when it stops.
public final class ServeInstanceBeacon: Sendable {
    public let id: String
    let host: String
    let listen: @Sendable () -> String
    let startedAt: Int64
    let store: any UpgradeStore
    let secrets: SecretBox
    /// The wall clock: liveness is judged by another process, maybe on another host.
    static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// `listen` gives the API listener's address when the row is written (its port is known only
    /// once it listens).
    public init(store: any UpgradeStore, secrets: SecretBox, listen: @escaping @Sendable () -> String) {
        id = SecureRandom.token(byteCount: 9)
        host = ProcessInfo.processInfo.hostName
        self.listen = listen
        startedAt = Self.wallClock()
        self.store = store
        self.secrets = secrets
    }

    /// The row as it is now.
    public func record(now: Int64) -> ServeInstanceRecord {
        ServeInstanceRecord(
            id: id,
            host: host,
            pid: Int64(ProcessInfo.processInfo.processIdentifier),
            listen: listen(),
            keyIDs: secrets.keyIDs,
            startedAt: startedAt,
            seenAt: now
        )
    }

    /// Records the instance as seen now with its keyring's ids, and forgets instances not seen for
    /// `RunningKeyrings.forgetSeconds`, in one transaction.
    public func beat() throws(StorageError) {
        let now = Self.wallClock()
        let row = record(now: now)
        try store.writeStorageErrors { tx in
            try tx.recordServeInstance(row)
            try tx.forgetServeInstances(seenBefore: now - RunningKeyrings.forgetSeconds)
        }
    }

    /// Deletes the instance's row: it has stopped.
    public func remove() throws(StorageError) {
        _ = try store.writeStorageErrors { try $0.removeServeInstance(id: id) }
    }
}
