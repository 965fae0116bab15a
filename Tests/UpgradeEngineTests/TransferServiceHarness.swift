import Foundation
import Synchronization
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// A team transfer against the Apple ID emulator: team A owns the app and its users are linked to
/// accounts in a migrated database; team B receives the app. `sender` holds team A's credentials,
/// `recipient` team B's, as the deployment's configuration would before and after the move. Time
/// is a settable clock shared with the emulator.
final class TransferWorld: Sendable {
    static let teamA = "TEAMA12345"
    static let teamB = "TEAMB67890"
    static let keyA = "KEYA123456"
    static let keyB = "KEYB123456"
    /// A third team, for a later transfer (B -> C).
    static let teamC = "TEAMC13579"
    static let keyC = "KEYC123456"
    static let clientID = "com.example.app"
    static let start: Int64 = 1_760_000_000

    /// A settable clock (a class, because a Mutex cannot be captured).
    final class Clock: Sendable {
        let value = Mutex<Int64>(TransferWorld.start)
    }

    struct User: Sendable {
        let accountID: String
        /// The emulator's own id for the Apple Account.
        let appleUserID: String
        /// Team A's id for the user, as linked before the transfer.
        let subA: String
        let emailMode: AppleEmailMode
    }

    let clock = Clock()
    let emulator: AppleIDEmulator
    let database: TestDatabase
    let secrets = SecretBox.developmentOnly()
    let clientA: EmulatedAppleClient
    let clientB: EmulatedAppleClient
    /// Counts and scripts every Apple call the sender's service makes.
    let appleA: CountingMigrator
    let appleB: CountingMigrator
    let clientC: EmulatedAppleClient
    let appleC: CountingMigrator
    let sender: TransferService
    let recipient: TransferService
    /// Team C's deployment, for a later transfer.
    let third: TransferService

    init(backend: Backend = .sqlite) throws {
        let clock = self.clock
        emulator = AppleIDEmulator(clock: { clock.value.withLock { $0 } })
        let keyA = P256PrivateKey()
        let keyB = P256PrivateKey()
        let keyC = P256PrivateKey()
        try emulator.addTeam(Self.teamA)
        try emulator.addTeam(Self.teamB)
        try emulator.addTeam(Self.teamC)
        try emulator.registerKey(teamID: Self.teamC, keyID: Self.keyC, publicKey: keyC.publicKey)
        try emulator.registerKey(teamID: Self.teamA, keyID: Self.keyA, publicKey: keyA.publicKey)
        try emulator.registerKey(teamID: Self.teamB, keyID: Self.keyB, publicKey: keyB.publicKey)
        try emulator.addApp(clientID: Self.clientID, teamID: Self.teamA)
        clientA = try emulator.client(teamID: Self.teamA, keyID: Self.keyA, privateKey: keyA)
        clientB = try emulator.client(teamID: Self.teamB, keyID: Self.keyB, privateKey: keyB)
        appleA = CountingMigrator(clientA)
        appleB = CountingMigrator(clientB)
        clientC = try emulator.client(teamID: Self.teamC, keyID: Self.keyC, privateKey: keyC)
        appleC = CountingMigrator(clientC)
        database = try backend.database()
        sender = TransferService(
            store: database.store,
            apple: appleA,
            configuration: TransferServiceConfiguration(teamID: Self.teamA)
        )
        recipient = TransferService(
            store: database.store,
            apple: appleB,
            configuration: TransferServiceConfiguration(teamID: Self.teamB)
        )
        third = TransferService(
            store: database.store,
            apple: appleC,
            configuration: TransferServiceConfiguration(teamID: Self.teamC)
        )
    }

    var store: any UpgradeStore { database.store }
    var now: Int64 { clock.value.withLock { $0 } }
    func advance(_ seconds: Int64) { clock.value.withLock { $0 += seconds } }

    /// An Apple user who signed in to the app under team A and whose account was linked then, as a
    /// completed upgrade leaves it (with a sealed refresh token).
    @discardableResult
    func addLinkedUser(_ name: String, emailMode: AppleEmailMode = .hidden, team: String = teamA) throws -> User {
        let appleUserID = try emulator.createUser(email: "\(name)@example.com")
        let authorization = try emulator.authorize(
            userID: appleUserID,
            clientID: Self.clientID,
            nonce: nil,
            state: nil,
            emailMode: emailMode
        )
        let accountID = "acct-\(name)"
        let refreshToken = secrets.seal(Array("r.\(name)".utf8), context: "refresh:\(accountID)")
        try store.write { tx in
            try tx.insertAccount(
                AccountRecord(id: accountID, username: name, credentialKind: .appleOnly, createdAt: now, updatedAt: now)
            )
            try tx.insertAppleLink(
                AppleLinkRecord(
                    accountID: accountID,
                    sub: authorization.user,
                    teamID: team,
                    clientID: Self.clientID,
                    email: authorization.email,
                    isPrivateEmail: emailMode == .hidden,
                    refreshTokenCiphertext: refreshToken,
                    status: .linked,
                    linkedAt: now,
                    updatedAt: now
                )
            )
        }
        return User(accountID: accountID, appleUserID: appleUserID, subA: authorization.user, emailMode: emailMode)
    }

    /// App Store Connect: team B (or `team`) accepts the transfer now; the window ends 60 days later.
    func transferApp(to team: String = teamB) throws -> Int64 {
        try emulator.transferApp(clientID: Self.clientID, toTeam: team)
        return now + TransferStateMachine.windowLength
    }

    /// Another account, `acct-other`, already linked to `sub` with team B's id (or `team`'s): as if
    /// the user had also upgraded a second password account during the window.
    func addOtherAccount(linkedTo sub: String, team: String = teamB) throws {
        try store.write { tx in
            try tx.insertAccount(
                AccountRecord(
                    id: "acct-other",
                    username: "other",
                    credentialKind: .appleOnly,
                    createdAt: 1,
                    updatedAt: 1
                )
            )
            try tx.insertAppleLink(
                AppleLinkRecord(
                    accountID: "acct-other",
                    sub: sub,
                    teamID: team,
                    clientID: Self.clientID,
                    email: nil,
                    isPrivateEmail: nil,
                    refreshTokenCiphertext: nil,
                    status: .linked,
                    linkedAt: 1,
                    updatedAt: 1
                )
            )
        }
    }

    /// Batch options for tests: no real waiting between retries.
    static func options(
        dryRun: Bool = false,
        concurrency: Int = 4,
        limit: Int? = nil,
        maxAttempts: Int = 3,
        unavailableRowsBeforeStop: Int = 20,
        onRow: (@Sendable (TransferRowReport) -> Void)? = nil
    ) -> TransferBatchOptions {
        TransferBatchOptions(
            dryRun: dryRun,
            concurrency: concurrency,
            limit: limit,
            maxAttempts: maxAttempts,
            retryBaseDelayMilliseconds: 1,
            retryMaxDelayMilliseconds: 2,
            unavailableRowsBeforeStop: unavailableRowsBeforeStop,
            onRow: onRow
        )
    }

    /// `service` (team A's, or another team's for a later transfer) prepares its accounts for `team` now.
    func prepare(
        _ options: TransferBatchOptions = TransferWorld.options(),
        by service: TransferService? = nil,
        for team: String = teamB
    ) async throws -> TransferBatchSummary {
        try await (service ?? sender).prepare(
            targetTeamID: team,
            clientID: Self.clientID,
            windowEndsAt: nil,
            now: now,
            options: options
        )
    }

    /// `service` (team B's, or the team that received the app later) completes the transfer now.
    func complete(
        windowEndsAt: Int64,
        _ options: TransferBatchOptions = TransferWorld.options(),
        by service: TransferService? = nil
    ) async throws -> TransferBatchSummary {
        try await (service ?? recipient).complete(
            clientID: Self.clientID,
            windowEndsAt: windowEndsAt,
            now: now,
            options: options
        )
    }

    func link(_ user: User) throws -> AppleLinkRecord? {
        try store.read { try $0.appleLink(accountID: user.accountID) }
    }
    func record(_ user: User) throws -> TransferRecord? {
        try store.read { try $0.transferRecord(accountID: user.accountID) }
    }
    func audit(_ user: User) throws -> [AuditEvent] {
        try store.read { try $0.auditTrail(accountID: user.accountID, limit: 1000) }
    }
    func auditEvents(_ user: User, named event: String) throws -> Int {
        try audit(user).filter { $0.event == event }.count
    }
    func transferRecordCount() throws -> Int {
        try store.read { try $0.transferRecords(status: nil, limit: 10_000) }.count
    }
    func auditCount(_ users: [User]) throws -> Int { try users.map { try audit($0).count }.reduce(0, +) }

    /// The user signs in on a device now; the identity token verified as the sign-in endpoint would.
    func signInClaims(_ user: User) async throws -> AppleIdentityClaims {
        let authorization = try emulator.authorize(
            userID: user.appleUserID,
            clientID: Self.clientID,
            nonce: nil,
            state: nil,
            emailMode: user.emailMode
        )
        let verifier = IdentityTokenVerifier(
            keys: emulator.keySet,
            policy: try IdentityTokenPolicy(allowedAudiences: [Self.clientID])
        )
        return try await verifier.verifyIdentityToken(authorization.identityToken, nonce: nil, now: now)
    }

    /// The events of the notifications Apple queued, decoded (their signatures are another suite's
    /// concern): type, sub, email, is_private_email and event_time.
    struct Event: Sendable {
        let type: String
        let sub: String
        let email: String?
        let isPrivateEmail: Bool?
        let eventTime: Int64?
    }

    func drainEvents() throws -> [Event] {
        try emulator.drainNotifications().map { notification in
            let jws = try JWSCompact(parsing: notification.payload, maximumLength: 16_384)
            let claims = try JSONValue.parse(jws.payload)
            var events = claims["events"]
            if let text = events?.stringValue { events = try JSONValue.parse(Array(text.utf8)) }
            let privateFlag = events?["is_private_email"]
            return Event(
                type: events?["type"]?.stringValue ?? "",
                sub: events?["sub"]?.stringValue ?? "",
                email: events?["email"]?.stringValue,
                isPrivateEmail: privateFlag.map { $0.boolValue ?? ($0.stringValue == "true") },
                eventTime: events?["event_time"]?.int64Value
            )
        }
    }

    func deliver(_ event: Event, to service: TransferService) throws -> TransferNotificationResult {
        try service.handleNotification(
            type: event.type,
            sub: event.sub,
            email: event.email,
            isPrivateEmail: event.isPrivateEmail,
            eventTime: event.eventTime,
            now: now
        )
    }
}

/// Wraps a team's emulator client: counts each call and lets a test answer some calls itself (an
/// Apple error, or an action such as moving the clock) before the real call is made.
final class CountingMigrator: AppleUserMigrating, Sendable {
    enum Call: Sendable, Hashable {
        case teamAccessToken
        case transferSub
        case migrate
    }

    /// Runs before each call with its kind and its 1-based number among calls of that kind; a
    /// returned error is answered instead of calling Apple.
    typealias Script = @Sendable (Call, Int) -> AppleEndpointError?

    private struct State {
        var counts: [Call: Int] = [:]
        var script: Script?
        var accessTokens: [String] = []
    }

    private let client: EmulatedAppleClient
    private let state = Mutex(State())

    init(_ client: EmulatedAppleClient) {
        self.client = client
    }

    /// A script that captures the world makes a cycle through it (world, migrator, script): set it
    /// back to nil when the test ends, or the world's database is never removed.
    func script(_ script: Script?) { state.withLock { $0.script = script } }
    func count(_ call: Call) -> Int { state.withLock { $0.counts[call, default: 0] } }
    /// Every team access token Apple issued through this client, to look for where they must not be.
    var accessTokens: [String] { state.withLock { $0.accessTokens } }

    private func before(_ call: Call) throws(AppleEndpointError) {
        let (number, script) = state.withLock { state in
            state.counts[call, default: 0] += 1
            return (state.counts[call, default: 0], state.script)
        }
        if let error = script?(call, number) { throw error }
    }

    func teamAccessToken(clientID: String) async throws(AppleEndpointError) -> AppleTokenResponse {
        try before(.teamAccessToken)
        let response = try await client.teamAccessToken(clientID: clientID)
        state.withLock { $0.accessTokens.append(response.accessToken) }
        return response
    }

    func transferSub(
        forSub sub: String,
        target: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> String {
        try before(.transferSub)
        return try await client.transferSub(forSub: sub, target: target, clientID: clientID, accessToken: accessToken)
    }

    func migrate(
        transferSub: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> AppleMigratedUser {
        try before(.migrate)
        return try await client.migrate(transferSub: transferSub, clientID: clientID, accessToken: accessToken)
    }
}

/// Collects the rows a batch reports.
final class RowCollector: Sendable {
    private let rows = Mutex<[TransferRowReport]>([])

    var onRow: @Sendable (TransferRowReport) -> Void { { row in self.rows.withLock { $0.append(row) } } }
    var all: [TransferRowReport] { rows.withLock { $0 } }
    func row(_ accountID: String) -> TransferRowReport? { all.first { $0.accountID == accountID } }
}

/// A store shared with another process that commits between this one's reads and its first write:
/// `beforeFirstWrite` runs once, just before the first write transaction starts, so a batch's
/// race with a concurrent batch is played in a fixed order.
final class InterleavingStore: UpgradeStore {
    private let base: any UpgradeStore
    private let beforeFirstWrite: Mutex<(@Sendable () throws -> Void)?>

    init(_ base: any UpgradeStore, beforeFirstWrite: @escaping @Sendable () throws -> Void) {
        self.base = base
        self.beforeFirstWrite = Mutex(beforeFirstWrite)
    }

    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
    func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
    func ping() throws(StorageError) { try base.ping() }
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T { try base.read(body) }

    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        let hook = beforeFirstWrite.withLock { hook in
            defer { hook = nil }
            return hook
        }
        try hook?()
        return try base.write(body)
    }
}

/// Counts the read and write transactions made through it.
final class CountingStore: UpgradeStore {
    private let base: any UpgradeStore
    private let state = Mutex((reads: 0, writes: 0))

    init(_ base: any UpgradeStore) {
        self.base = base
    }

    var counts: (reads: Int, writes: Int) { state.withLock { $0 } }

    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
    func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
    func ping() throws(StorageError) { try base.ping() }

    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        state.withLock { $0.reads += 1 }
        return try base.read(body)
    }

    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        state.withLock { $0.writes += 1 }
        return try base.write(body)
    }
}
