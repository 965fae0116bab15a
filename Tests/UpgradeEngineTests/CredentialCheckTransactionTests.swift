import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// What a wrong password costs the database: the credential check reads once and writes once,
/// the client's count included, for an upgrade and a password change alike.
@Suite("Credential check transactions")
struct CredentialCheckTransactionTests {
    static let clientKey = "192.0.2.1"

    /// A store that counts the transactions run on it.
    final class CountingStore: UpgradeStore {
        let base: any UpgradeStore
        let counts = Mutex((reads: 0, writes: 0))

        init(_ base: any UpgradeStore) { self.base = base }

        func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
        func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
        func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
            counts.withLock { $0.writes += 1 }
            return try base.write(body)
        }
        func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
            counts.withLock { $0.reads += 1 }
            return try base.read(body)
        }
        func ping() throws(StorageError) { try base.ping() }

        /// The counts since the last call.
        func take() -> (reads: Int, writes: Int) {
            counts.withLock { counts in
                defer { counts = (0, 0) }
                return counts
            }
        }
    }

    /// The harness's service again, on a counting store and with `throttle` as its client limit.
    static func service(
        _ h: UpgradeHarness,
        throttle: ClientThrottle.Policy?
    ) -> (UpgradeService, CountingStore) {
        let store = CountingStore(h.store)
        var configuration = h.service.configuration
        configuration.clientThrottle = throttle
        configuration.failureFloor = .zero
        let service = UpgradeService(
            store: store,
            passwords: h.service.passwords,
            secrets: h.secrets,
            identityTokens: h.service.identityTokens,
            apple: h.service.apple,
            configuration: configuration
        )
        return (service, store)
    }

    static let throttles: [ClientThrottle.Policy?] = [nil, ClientThrottle.Policy(failures: 4, window: 600)!]

    func failure(_ body: () throws -> some Any) -> ServiceFailure? {
        do {
            _ = try body()
            Issue.record("expected a failure")
            return nil
        } catch {
            return error as? ServiceFailure
        }
    }

    @Test(
        "a wrong password or an unknown username costs one read and one write, the client's count included",
        arguments: Backend.all,
        throttles
    )
    func wrongPassword(_ backend: Backend, throttle: ClientThrottle.Policy?) throws {
        let h = try UpgradeHarness(backend: backend)
        try h.addAccount("alice", password: "Old-password-1")
        let (service, store) = Self.service(h, throttle: throttle)
        let now = UpgradeHarness.now
        for username in ["alice", "nobody"] {
            let upgrade = failure {
                try service.start(
                    username: username,
                    password: "wrong",
                    serviceIdentifier: "s",
                    clientKey: Self.clientKey,
                    now: now
                )
            }
            #expect(upgrade?.kind == .invalidCredentials)
            #expect(store.take() == (1, 1), "upgrade as \(username)")
            let change = failure {
                try service.startPasswordChange(
                    username: username,
                    password: "wrong",
                    newPassword: "abcdEf-ghijK1-lmnoPq",
                    serviceIdentifier: "s",
                    clientKey: Self.clientKey,
                    now: now + 10
                )
            }
            #expect(change?.kind == .invalidCredentials)
            #expect(store.take() == (1, 1), "password change as \(username)")
        }
        // Each wrong password was counted for the username and, with a limit, for the client.
        let (aliceFailures, paidOffAt) = try h.store.read { tx in
            (
                try tx.throttle(usernameKey: "alice")?.failures,
                try tx.clientThrottlePaidOffAt(clientKey: Self.clientKey)
            )
        }
        #expect(aliceFailures == 2)
        #expect((paidOffAt != nil) == (throttle != nil))
        guard throttle != nil else { return }
        // Over its limit the client is refused by the read alone: no hash, no write, no count.
        let refused = failure {
            try service.start(
                username: "alice",
                password: "Old-password-1",
                serviceIdentifier: "s",
                clientKey: Self.clientKey,
                now: now + 10
            )
        }
        #expect(refused?.kind == .rateLimited && refused?.retryAfter != nil)
        #expect(store.take() == (1, 0))
        #expect(try h.store.read { try $0.clientThrottlePaidOffAt(clientKey: Self.clientKey) } == paidOffAt)
    }
}
