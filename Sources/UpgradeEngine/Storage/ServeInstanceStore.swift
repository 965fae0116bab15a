/// The running `serve` processes and the key ids of the keyrings they hold, shared by every process
/// on the database (docs/architecture.md §10.4, "Which keyrings are running"). What a row means
/// (live, lagging a rotation) is `RunningKeyrings`'s; the store only keeps the rows.
public protocol ServeInstanceStore {
    /// Stores the instance's row, or replaces its keyring, listen address and `seenAt`.
    func recordServeInstance(_ instance: ServeInstanceRecord) throws(StorageError)
    /// Deletes the instance's row; returns whether there was one.
    @discardableResult
    func removeServeInstance(id: String) throws(StorageError) -> Bool
    /// The instances seen at or after `since`, by id.
    func serveInstances(seenSince since: Int64) throws(StorageError) -> [ServeInstanceRecord]
    /// Deletes the instances last seen before `before` (processes that ended without a clean exit);
    /// returns how many.
    @discardableResult
    func forgetServeInstances(seenBefore before: Int64) throws(StorageError) -> Int
}

/// One `serve` process as it last said it was: where it runs and which key ids its keyring lists,
/// newest first. Never a key.
public struct ServeInstanceRecord: Sendable, Hashable {
    /// Drawn at random when the process starts.
    public var id: String
    public var host: String
    public var pid: Int64
    /// The API listener's address, `host:port`.
    public var listen: String
    /// The keyring's ids, newest first: values are sealed under the first.
    public var keyIDs: [String]
    public var startedAt: Int64
    public var seenAt: Int64

    public init(
        id: String,
        host: String,
        pid: Int64,
        listen: String,
        keyIDs: [String],
        startedAt: Int64,
        seenAt: Int64
    ) {
        self.id = id
        self.host = host
        self.pid = pid
        self.listen = listen
        self.keyIDs = keyIDs
        self.startedAt = startedAt
        self.seenAt = seenAt
    }
}
