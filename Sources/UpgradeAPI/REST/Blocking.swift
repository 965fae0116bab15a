import UpgradeEngine

/// Runs async work from a worker thread and waits for it. Handlers run on the server's dedicated
/// worker threads, which may block, so the async part (a database write, an Apple call, a JWKS
/// fetch) runs on the worker itself (`BlockingRunner`) rather than being handed to Swift's pool
/// and back.
func blockingWait<T: Sendable, E: Error>(_ body: @escaping @Sendable () async throws(E) -> T) throws(E) -> T {
    try BlockingRunner.run(body)
}
