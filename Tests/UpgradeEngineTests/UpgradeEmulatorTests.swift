import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// The upgrade service against the Apple ID emulator: identity tokens signed with the emulator's
/// published keys, authorization codes exchanged with a real ES256 client secret.
@Suite("Upgrade against the Apple ID emulator")
struct UpgradeEmulatorTests {
    static let teamID = "TEAMA12345"
    static let keyID = "KEY1234567"
    static let clientID = "com.example.app"

    final class World: Sendable {
        /// A settable clock shared with the emulator (a class, because a Mutex cannot be captured).
        final class Clock: Sendable {
            let value = Mutex<Int64>(1_760_000_000)
        }
        let clock = Clock()
        let emulator: AppleIDEmulator
        let harness: UpgradeHarness
        let service: UpgradeService
        let userID: String

        /// `wrap` puts a store between the service and the database (the harness keeps the bare one);
        /// `onEffect` sees each effect the service performs.
        init(
            backend: Backend = .sqlite,
            wrap: (any UpgradeStore) -> any UpgradeStore = { $0 },
            onEffect: @escaping @Sendable (UpgradeEffect, String) -> Void = { _, _ in }
        ) throws {
            let clock = self.clock
            emulator = AppleIDEmulator(clock: { clock.value.withLock { $0 } })
            try emulator.addTeam(UpgradeEmulatorTests.teamID)
            let key = P256PrivateKey()
            try emulator.registerKey(
                teamID: UpgradeEmulatorTests.teamID,
                keyID: UpgradeEmulatorTests.keyID,
                publicKey: key.publicKey
            )
            try emulator.addApp(clientID: UpgradeEmulatorTests.clientID, teamID: UpgradeEmulatorTests.teamID)
            try emulator.addApp(clientID: "com.example.other", teamID: UpgradeEmulatorTests.teamID)
            userID = try emulator.createUser(email: "alice@example.com", fullName: "Alice Example")
            harness = try UpgradeHarness(backend: backend)
            service = UpgradeService(
                store: wrap(harness.store),
                passwords: PasswordVerifier(dummyParameters: UpgradeHarness.fastHash),
                secrets: harness.secrets,
                identityTokens: IdentityTokenVerifier(
                    keys: emulator.keySet,
                    policy: try IdentityTokenPolicy(allowedAudiences: [UpgradeEmulatorTests.clientID])
                ),
                apple: try emulator.client(
                    teamID: UpgradeEmulatorTests.teamID,
                    keyID: UpgradeEmulatorTests.keyID,
                    privateKey: key
                ),
                configuration: {
                    var configuration = UpgradeServiceConfiguration(appleTeamID: UpgradeEmulatorTests.teamID)
                    configuration.onEffect = onEffect
                    return configuration
                }()
            )
        }

        var now: Int64 { clock.value.withLock { $0 } }
        func advance(_ seconds: Int64) { clock.value.withLock { $0 += seconds } }

        /// Apple's sheet for `user` (the world's by default) with a given nonce and state.
        func sheet(
            user: String? = nil,
            nonce: String?,
            state: String?,
            emailMode: AppleEmailMode = .hidden,
            codeHash: Bool = true
        ) throws -> AppleAuthorization {
            try emulator.authorize(
                userID: user ?? userID,
                clientID: UpgradeEmulatorTests.clientID,
                nonce: nonce,
                state: state,
                emailMode: emailMode,
                codeHashInToken: codeHash
            )
        }

        /// What the device does between our two calls: Apple's sheet with our state and nonce.
        func authorize(
            _ answer: UpgradeAnswer,
            clientID: String = UpgradeEmulatorTests.clientID
        ) throws -> UpgradeService.AppleCredential {
            let authorization = try emulator.authorize(
                userID: userID,
                clientID: clientID,
                nonce: answer.nonce,
                state: answer.state,
                emailMode: .hidden
            )
            #expect(authorization.state == answer.state, "Apple echoes the state")
            return UpgradeService.AppleCredential(
                identityToken: authorization.identityToken,
                authorizationCode: authorization.authorizationCode,
                state: authorization.state ?? "",
                user: authorization.user
            )
        }
    }

    @Test("the whole upgrade: password, Apple's sheet, code exchange, account converted")
    func happyPath() async throws {
        let world = try World()
        let alice = try world.harness.addAccount("alice", password: "pw")
        let started = try world.service.start(
            username: "alice",
            password: "pw",
            serviceIdentifier: "example.com",
            now: world.now
        )
        let credential = try world.authorize(started)
        world.advance(3)
        let done = try await world.service.submitAppleCredential(id: started.id, credential, now: world.now)
        #expect(done.status == .completed)
        let link = try world.harness.store.read { try $0.appleLink(accountID: alice.id) }
        #expect(link?.sub == (try world.emulator.subject(userID: world.userID, teamID: Self.teamID)))
        #expect(link?.email == (try world.emulator.relayEmail(userID: world.userID, teamID: Self.teamID)))
        #expect(link?.isPrivateEmail == true)
        #expect(try world.harness.store.read { try $0.passwordCredential(accountID: alice.id) } == nil)
        #expect(
            world.emulator.credentialState(forUserID: credential.user ?? "", clientID: Self.clientID) == .authorized
        )
    }

    @Test("an authorization code works once: a second upgrade with it is refused by Apple")
    func codeIsSingleUse() async throws {
        let world = try World()
        try world.harness.addAccount("alice", password: "pw")
        try world.harness.addAccount("bob", password: "pw")
        let first = try world.service.start(
            username: "alice",
            password: "pw",
            serviceIdentifier: "s",
            now: world.now
        )
        let credential = try world.authorize(first)
        _ = try await world.service.submitAppleCredential(id: first.id, credential, now: world.now)

        // Bob's upgrade replays Alice's code with a fresh, valid token of another Apple user.
        let bobUser = try world.emulator.createUser(email: "bob@example.com")
        let second = try world.service.start(
            username: "bob",
            password: "pw",
            serviceIdentifier: "s",
            now: world.now
        )
        let bobAuthorization = try world.emulator.authorize(
            userID: bobUser,
            clientID: Self.clientID,
            nonce: second.nonce,
            state: second.state,
            emailMode: .shared
        )
        let replay = UpgradeService.AppleCredential(
            identityToken: bobAuthorization.identityToken,
            authorizationCode: credential.authorizationCode,
            state: second.state ?? ""
        )
        do {
            _ = try await world.service.submitAppleCredential(id: second.id, replay, now: world.now)
            Issue.record("a used code was accepted")
        } catch {
            #expect(error.kind == .invalidAuthorizationCode)
        }
        #expect(try world.harness.account("bob")?.credentialKind == .password)
    }

    @Test("a code older than five minutes is refused")
    func codeExpires() async throws {
        let world = try World()
        try world.harness.addAccount("alice", password: "pw")
        let started = try world.service.start(
            username: "alice",
            password: "pw",
            serviceIdentifier: "s",
            now: world.now
        )
        let credential = try world.authorize(started)
        world.advance(299)
        // Still inside our upgrade's deadline (300 s) but the code is 299 s old: accepted.
        let done = try await world.service.submitAppleCredential(id: started.id, credential, now: world.now)
        #expect(done.status == .completed)

        try world.harness.addAccount("bob", password: "pw")
        let late = try world.service.start(
            username: "bob",
            password: "pw",
            serviceIdentifier: "s",
            now: world.now
        )
        let bobUser = try world.emulator.createUser(email: "bob@example.com")
        let authorization = try world.emulator.authorize(
            userID: bobUser,
            clientID: Self.clientID,
            nonce: late.nonce,
            state: late.state,
            emailMode: .shared
        )
        world.advance(301)
        do {
            _ = try await world.service.submitAppleCredential(
                id: late.id,
                .init(
                    identityToken: authorization.identityToken,
                    authorizationCode: authorization.authorizationCode,
                    state: late.state ?? ""
                ),
                now: world.now
            )
            Issue.record("accepted after the upgrade's deadline")
        } catch {
            #expect(error.kind == .upgradeExpired)
        }
    }

    @Test("a token issued to another client id is refused")
    func otherAudience() async throws {
        let world = try World()
        try world.harness.addAccount("alice", password: "pw")
        let started = try world.service.start(
            username: "alice",
            password: "pw",
            serviceIdentifier: "s",
            now: world.now
        )
        let credential = try world.authorize(started, clientID: "com.example.other")
        do {
            _ = try await world.service.submitAppleCredential(id: started.id, credential, now: world.now)
            Issue.record("a token for another aud was accepted")
        } catch {
            #expect(error.kind == .invalidIdentityToken)
        }
    }

    @Test("50 concurrent completions against the emulator: one conversion, one code exchange, all see success")
    func concurrentCompletions() async throws {
        let world = try World()
        let alice = try world.harness.addAccount("alice", password: "pw")
        let started = try world.service.start(
            username: "alice",
            password: "pw",
            serviceIdentifier: "s",
            now: world.now
        )
        let credential = try world.authorize(started)
        let service = world.service
        let now = world.now
        let results = await withTaskGroup(of: UpgradeAnswer?.self) { group in
            for _ in 0..<50 {
                group.addTask { try? await service.submitAppleCredential(id: started.id, credential, now: now) }
            }
            return await group.reduce(into: [UpgradeAnswer?]()) { $0.append($1) }
        }
        #expect(results.compactMap { $0 }.count == 50)
        #expect(Set(results.compactMap { $0?.accountID }) == [alice.id])
        let conversions = try world.harness.store.read { try $0.auditTrail(accountID: alice.id, limit: 100) }
            .filter { $0.event == "account.convertedToApple" }
        #expect(conversions.count == 1)
    }

    @Test(
        "every write run twice, as a conflict retry runs it: the upgrade completes with one code exchange",
        arguments: Backend.all
    )
    func retriedWritesNeverRepeatTheExchange(backend: Backend) async throws {
        let performed = Mutex<[UpgradeEffect]>([])
        let replaying = Mutex<ReplayingStore?>(nil)
        let world = try World(
            backend: backend,
            wrap: { base in
                let store = ReplayingStore(base)
                replaying.withLock { $0 = store }
                return store
            },
            onEffect: { effect, _ in performed.withLock { $0.append(effect) } }
        )
        let alice = try world.harness.addAccount("alice", password: "pw")
        let started = try world.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: world.now)
        let credential = try world.authorize(started)
        let done = try await world.service.submitAppleCredential(id: started.id, credential, now: world.now)
        #expect(done.status == .completed)
        #expect(done.accountID == alice.id)
        // Apple's codes work once: had the exchange been repeated, the second would have been refused.
        #expect(performed.withLock { $0.filter { $0 == .exchangeAuthorizationCode }.count } == 1)
        // The in-transaction effects were performed again by each replayed run, as documented.
        let conversions = performed.withLock {
            $0.filter {
                if case .convertAccount = $0 { return true }
                return false
            }.count
        }
        #expect(conversions == 2)
        #expect((replaying.withLock { $0 }?.replayed ?? 0) >= 3)
        let trail = try world.harness.store.read { try $0.auditTrail(accountID: alice.id, limit: 100) }
        #expect(trail.filter { $0.event == "account.convertedToApple" }.count == 1)
        let link = try world.harness.store.read { try $0.appleLink(accountID: alice.id) }
        #expect(link?.sub == (try world.emulator.subject(userID: world.userID, teamID: Self.teamID)))
        #expect(try world.harness.store.read { try $0.passwordCredential(accountID: alice.id) } == nil)
    }
}

/// A store that runs every write closure twice: first in a transaction it then rolls back, as
/// PostgreSQL rolls back a run that lost a serialization conflict, then for real. What the storage
/// protocol allows a backend to do, done every time.
final class ReplayingStore: UpgradeStore, Sendable {
    private struct Again: Error {}
    let base: any UpgradeStore
    private let count = Mutex(0)

    init(_ base: any UpgradeStore) { self.base = base }

    /// Write closures run twice so far.
    var replayed: Int { count.withLock { $0 } }

    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
    func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
    func ping() throws(StorageError) { try base.ping() }
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T { try base.read(body) }
    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        do {
            _ = try base.write { tx throws -> T in
                _ = try body(tx)
                throw Again()
            }
        } catch is Again {
            count.withLock { $0 += 1 }
        }
        return try base.write(body)
    }
}
