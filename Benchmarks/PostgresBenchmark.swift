import AppleEmulator
import Foundation
import UpgradeEngine

/// The PostgreSQL store named by `UPGRADE_DB` (a postgres:// URL), migrated; nil when `UPGRADE_DB`
/// names no PostgreSQL database. The benchmarks add rows of their own (ids carry a run tag), so a
/// development cluster serves for many runs.
func benchmarkPostgresStore() throws -> PostgresStore? {
    guard let text = ProcessInfo.processInfo.environment["UPGRADE_DB"],
        case .postgres(let configuration) = try DatabaseLocation.parse(text)
    else { return nil }
    let store = try PostgresStore(configuration: configuration)
    _ = try store.migrate(now: Int64(Date().timeIntervalSince1970))
    return store
}

/// A short tag that keeps one run's ids apart from earlier runs' on the same database.
let runTag = String(UUID().uuidString.prefix(8)).lowercased()

/// Rows per second of one-row committed transactions (an audit row each, as every transition writes).
func commitRate(_ store: any UpgradeStore, now: Int64) throws -> Double {
    var counter = 0
    return try measure(batch: 16) {
        counter += 1
        try store.write { tx in
            try tx.appendAudit(AuditEvent(at: now, accountID: nil, upgradeID: nil, event: "bench.\(runTag).\(counter)"))
        }
    }
}

/// Committed transitions per second: `cancel` on sessions waiting for Apple's credential, inserted
/// directly, so each timed call is one load, one apply, and one versioned update with its audit row.
func transitionRate(_ store: any UpgradeStore, sessions: Int, now: Int64) throws -> Double {
    let policy = UpgradePolicy.default
    var sessionIDs: [String] = []
    for start in stride(from: 0, to: sessions, by: 1000) {
        try store.write { tx in
            for index in start..<min(sessions, start + 1000) {
                var machine = UpgradeStateMachine.start(now: now, policy: policy)
                _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: false)), now: now)
                let id = "bench-\(runTag)-\(index)"
                sessionIDs.append(id)
                try tx.insertUpgradeSession(
                    UpgradeSessionRecord(
                        id: id,
                        accountID: nil,
                        usernameKey: "u\(index)",
                        serviceIdentifier: "s",
                        status: machine.status.rawValue,
                        machine: UpgradeService.encode(machine),
                        stateHash: nil,
                        nonceHash: nil,
                        linkedSub: nil,
                        createdAt: now,
                        expiresAt: now + 300,
                        updatedAt: now
                    )
                )
            }
        }
    }
    let service = UpgradeService(
        store: store,
        secrets: SecretBox.developmentOnly(),
        identityTokens: IdentityTokenVerifier(
            keys: try JWKSet(keys: [("k", try RSAPrivateKey(generatingBits: 2048).publicKey)]),
            policy: try IdentityTokenPolicy(allowedAudiences: ["com.example.app"])
        ),
        apple: AppleIDEmulatorUnavailable(),
        configuration: UpgradeServiceConfiguration(appleTeamID: "TEAMA12345")
    )
    var next = 0
    var failures = 0
    let rate = measure(batch: 16) {
        do {
            _ = try service.cancel(id: sessionIDs[next % sessions], reason: .userCanceled, now: now + 1)
        } catch {
            failures += 1
        }
        next += 1
    }
    // A session cancelled twice would be a refusal, not a commit: then the figure means nothing.
    guard next <= sessions, failures == 0 else {
        throw BenchmarkError("\(next) cancels for \(sessions) sessions, \(failures) refused: raise the session count")
    }
    return rate
}

/// What completed upgrades cost PostgreSQL, counted by the store: the upgrade service in process,
/// with the Apple ID emulator in process too, `count` upgrades without step-up after one that
/// warms the connection (its statements prepared). Measured as Tests/UpgradeEngineTests/
/// StoreRoundTripTests measures it: the accounts' hashes have the service's own parameters, so no
/// rehash (a fourth write transaction) adds to the count.
func postgresTrafficPerUpgrade(
    _ store: PostgresStore,
    count: Int,
    now: Int64
) async throws -> (cold: PostgresTraffic, warm: PostgresTraffic) {
    let teamID = "TEAMA12345"
    let clientID = "com.example.app"
    let emulator = AppleIDEmulator(clock: { now })
    try emulator.addTeam(teamID)
    let key = P256PrivateKey()
    try emulator.registerKey(teamID: teamID, keyID: "KEY1234567", publicKey: key.publicKey)
    try emulator.addApp(clientID: clientID, teamID: teamID)
    let cheap = PasswordHasher.Parameters(memoryKiB: 256, iterations: 1, parallelism: 1)
    var configuration = UpgradeServiceConfiguration(appleTeamID: teamID)
    configuration.passwordHasher = try PasswordHasher(parameters: cheap)
    let service = UpgradeService(
        store: store,
        passwords: PasswordVerifier(dummyParameters: cheap),
        secrets: SecretBox.developmentOnly(),
        identityTokens: IdentityTokenVerifier(
            keys: emulator.keySet,
            policy: try IdentityTokenPolicy(allowedAudiences: [clientID])
        ),
        apple: try emulator.client(teamID: teamID, keyID: "KEY1234567", privateKey: key),
        configuration: configuration
    )
    let hash = try configuration.passwordHasher.hash(password: "pw")
    let usernames = (0...count).map { "t\(runTag)-\($0)" }
    try store.write { tx in
        for username in usernames {
            let account = AccountRecord(
                id: "acct-" + username,
                username: username,
                credentialKind: .password,
                createdAt: now,
                updatedAt: now
            )
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: "argon2id", updatedAt: now)
            )
        }
    }
    func upgrade(_ username: String) async throws {
        let started = try service.start(username: username, password: "pw", serviceIdentifier: "s", now: now)
        let authorization = try emulator.authorize(
            userID: try emulator.createUser(email: "\(username)@example.com"),
            clientID: clientID,
            nonce: started.nonce,
            state: started.state,
            emailMode: .hidden
        )
        let done = try await service.submitAppleCredential(
            id: started.id,
            UpgradeService.AppleCredential(
                identityToken: authorization.identityToken,
                authorizationCode: authorization.authorizationCode,
                state: authorization.state ?? "",
                user: authorization.user
            ),
            now: now
        )
        guard done.status == .completed else { throw BenchmarkError("upgrade of \(username) did not complete") }
    }
    // A store fresh from `migrate` holds one connection, whose statements are not prepared yet.
    let coldStart = store.traffic
    try await upgrade(usernames[0])
    let cold = store.traffic - coldStart
    let warmStart = store.traffic
    for username in usernames.dropFirst() { try await upgrade(username) }
    return (cold, store.traffic - warmStart)
}
