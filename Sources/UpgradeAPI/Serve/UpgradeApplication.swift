import Foundation
import Synchronization
import UpgradeEngine

/// The assembled server: store, secrets, Apple connections, upgrade and transfer services, REST
/// handler and HTTP server, from validated `ServerSettings`. In development it also runs the given
/// stand-in for Apple (the Apple ID emulator) and reaches it through the same HTTPS client as production.
public final class UpgradeApplication: Sendable {
    public let settings: ServerSettings
    public let store: any UpgradeStore
    public let service: UpgradeService
    public let transfers: TransferService
    public let apple: AppleConnections
    public let server: HTTPServer
    /// The `UPGRADE_HEALTH_LISTEN` listener (`/healthz` and `/readyz` only), if configured.
    public let healthServer: HTTPServer?
    /// The support console's listener (`UPGRADE_CONSOLE_LISTEN`), if configured.
    public let consoleServer: HTTPServer?
    public let development: (any DevelopmentApple)?
    public let metrics: Metrics
    /// Sends the queue of Apple revocations left by account deletions.
    public let revocations: AppleRevocationSender
    /// Runs `revocations` every few seconds from `start()` to `stop()`.
    public let revocationWorker: AppleRevocationWorker
    /// Checks each Apple link's refresh token once per `UPGRADE_APPLE_LINK_CHECK_SECONDS`; nil when off.
    public let linkCheckWorker: AppleLinkCheckWorker?
    /// Delivers the webhook outbox (`UPGRADE_WEBHOOK_URL`); sends nothing when that is unset.
    public let webhooks: WebhookSender
    /// Runs `webhooks` every `webhookIntervalMilliseconds` from `start()` to `stop()`.
    public let webhookWorker: QueueWorker
    /// This process's row in `serve_instances`: its keyring's ids, for `keys reseal` and `keys status`
    /// (docs/architecture.md §10.4, "Which keyrings are running").
    public let instance: ServeInstanceBeacon
    /// Writes `instance` every `RunningKeyrings.heartbeatSeconds` from `start()` to `stop()`.
    let instanceWorker: QueueWorker
    /// Every routed operation as `METHOD /pattern`.
    public let operations: [String]
    /// What seals TOTP secrets and Apple refresh tokens (`UPGRADE_SECRET_KEY_FILE`).
    public let secrets: SecretBox
    /// The admin tokens each request reads once; a reload replaces them.
    let adminTokens: Reloadable<AdminTokenSet?>
    /// Asks the legacy login system (`UPGRADE_LEGACY_VERIFY_URL`), if one is set.
    let legacyVerifier: LegacyPasswordVerifier?
    let log: RequestLog
    /// One reload at a time: a second `SIGHUP` waits for the first to finish.
    let reloading = Mutex<Void>(())

    /// `development` is started in place of Apple when `settings.development` is set, and required then.
    public init(
        settings: ServerSettings,
        development: (any DevelopmentApple.Type)? = nil,
        log: RequestLog = RequestLog(),
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        revocationIntervalMilliseconds: Int = 5000,
        webhookIntervalMilliseconds: Int = 1000,
        webhookPolicy: WebhookSender.Policy = WebhookSender.Policy(),
        configureServer: (inout HTTPServer.Configuration) -> Void = { _ in }
    ) throws {
        self.settings = settings
        let now = clock()
        // Outside --dev nothing creates the database but `db migrate`: a mistyped path says so
        // and leaves no empty file behind (README, Command line).
        if !settings.development, settings.database.isMissingFile {
            throw ServerSettingsError(problems: [
                "UPGRADE_DB: no database at \(settings.database); 'upgrade-cli db migrate' creates one"
            ])
        }
        store = try settings.database.open()
        if settings.development {
            _ = try store.migrate(now: now)
        } else {
            let pending = try store.migrationStatus().filter { $0.appliedAt == nil }
            guard pending.isEmpty else {
                throw ServerSettingsError(problems: [
                    "UPGRADE_DB: the database has \(pending.count) pending migration(s); run 'upgrade-cli db migrate' first"
                ])
            }
        }
        // ServerSettings.load opened the key file (or refused to start without one outside --dev).
        let secrets = settings.secrets ?? SecretBox.developmentOnly()
        self.secrets = secrets
        self.log = log
        // A sealed value whose key the keyring does not list could not be opened: refuse to start,
        // naming the key (one SQL count; docs/architecture.md §10.4).
        if let problem = try KeyringStatus.load(store: store, secrets: secrets).missingKeyProblem {
            throw ServerSettingsError(problems: [problem])
        }
        // A listed id whose recorded check value this keyring cannot open names another key than
        // the one that sealed values under it; the newest key's check is recorded if it has none.
        if let problem = try KeyChecks.verify(store: store, secrets: secrets, now: now) {
            throw ServerSettingsError(problems: [problem])
        }

        let teamID: String
        if settings.development {
            guard let development else {
                throw ServerSettingsError(problems: ["--dev: this program has no stand-in for Apple to run"])
            }
            let environment: any DevelopmentApple
            do {
                environment = try development.init(
                    clientIDs: settings.clientIDs,
                    emulatorPort: settings.emulatorPort,
                    clock: clock,
                    log: { line in log.log("info", "emulator", [("detail", .string(line))]) }
                )
            } catch {
                // Like UPGRADE_LISTEN's: a configuration problem naming the setting, not a crash.
                throw ServerSettingsError(problems: [
                    "UPGRADE_DEV_EMULATOR_PORT: cannot run the Apple emulator on port \(settings.emulatorPort): \(error); "
                        + "--emulator-port 0 picks a free one"
                ])
            }
            self.development = environment
            apple = try environment.connections(audiences: Set(settings.clientIDs))
            teamID = DevelopmentEnvironment.teamID
            try DevelopmentEnvironment.ensureDemoAccount(store: store, secrets: secrets, now: now)
        } else {
            self.development = nil
            apple = try AppleConnections.live(settings)
            teamID = settings.teamID ?? ""
        }

        let metrics = Metrics()
        self.metrics = metrics
        var passwords = PasswordVerifier()
        passwords.onHashed = { metrics.recordPasswordHash(cpuSeconds: $0) }
        // Firebase scrypt and keyed HMAC hashes name sealed parameter sets stored by imports.
        passwords.parameterSets = StoredHashParameters(store: store, secrets: secrets)
        var upgradeConfiguration = UpgradeServiceConfiguration(
            policy: try UpgradePolicy(conversionLifetime: settings.conversionTimeout),
            appleTeamID: teamID
        )
        upgradeConfiguration.passwordRules = settings.passwordRules
        upgradeConfiguration.failureFloor = settings.failureFloor
        upgradeConfiguration.clientThrottle = settings.clientThrottle
        upgradeConfiguration.onFailureFloorOverrun = { _ in metrics.recordFailureFloorOverrun() }
        var legacyVerifier: LegacyPasswordVerifier?
        if let endpoint = settings.legacyVerify {
            legacyVerifier = LegacyPasswordVerifier(
                endpoint: endpoint,
                onCall: { call in
                    metrics.recordLegacyCall(call)
                    // A check refused as busy sent nothing: counted, not logged one by one.
                    guard let outage = call.outage, outage.kind != .busy else { return }
                    log.log(
                        "warning",
                        "legacy-verify",
                        [("outage", .string(outage.kind.rawValue)), ("detail", .string(outage.reason))]
                    )
                }
            )
            upgradeConfiguration.legacyVerifier = legacyVerifier
            upgradeConfiguration.legacyCreate = settings.legacyCreate
        }
        self.legacyVerifier = legacyVerifier
        service = UpgradeService(
            store: store,
            passwords: passwords,
            secrets: secrets,
            identityTokens: apple.identityTokens,
            apple: apple.client,
            configuration: upgradeConfiguration
        )
        // Conversions a stopped server left behind end as interrupted before the first request.
        let interrupted = try service.failInterruptedConversions(now: now)
        if interrupted > 0 {
            let detail = "\(interrupted) conversion(s) interrupted by a stop were failed; the accounts are unchanged"
            log.log("info", "upgrades", [("detail", .string(detail))])
        }
        transfers = TransferService(
            store: store,
            apple: apple.client,
            configuration: TransferServiceConfiguration(teamID: teamID)
        )
        var configuration = HTTPServer.Configuration()
        configuration.host = settings.host
        configuration.port = settings.port
        configuration.maxConnectionsPerClient = settings.maxConnectionsPerClient
        configuration.maxQueueDelay = settings.maxQueueDelay
        // A call to the legacy login system waits on the network, up to its timeout: the workers it
        // may hold are added, so a stalled legacy system leaves the others to every other route.
        if let endpoint = settings.legacyVerify { configuration.workerCount += endpoint.maximumConcurrentCalls }
        // A proxy's one address carries many clients.
        configuration.connectionLimitExemptPeers = settings.trustedProxies
        // A provisioning batch of 1000 rows with modern hashes is about 150 KB; every other body
        // stays within the default 64 KiB (README, "Limits").
        configuration.limits.maxBodyBytesByRoute = [UpgradeAPIHandler.provisionBatchRoute: 1 << 20]
        configuration.onEvent = { event in log.log("info", "server", [("event", .string(event.description))]) }
        configureServer(&configuration)
        let statistics = StatisticsBox()
        let signIns = SignInService(
            store: store,
            identityTokens: apple.identityTokens,
            apple: apple.client,
            nonces: SignInNonces(secrets: secrets),
            transfers: transfers,
            upgrades: service
        )
        let notifications = AppleNotificationService(
            store: store,
            keys: apple.identityTokens,
            allowedAudiences: Set(settings.clientIDs + (settings.development ? [DevelopmentEnvironment.clientID] : [])),
            transfers: transfers
        )
        revocations = AppleRevocationSender(
            store: store,
            secrets: secrets,
            apple: apple.revocations,
            onEvent: { event in
                switch event {
                case .revoked(let id, let attempts, let note):
                    metrics.recordRevocation(done: true)
                    var fields: [(String, JSONValue)] = [("revocation", .string(id)), ("attempts", .integer(attempts))]
                    if let note { fields.append(("note", .string(note))) }
                    log.log("info", "apple revocation done", fields)
                case .deferred(let id, let attempts, let reason, let nextAttemptAt):
                    metrics.recordRevocation(done: false)
                    log.log(
                        "info",
                        "apple revocation deferred",
                        [
                            ("revocation", .string(id)), ("attempts", .integer(attempts)), ("reason", .string(reason)),
                            ("nextAttemptAt", .integer(nextAttemptAt)),
                        ]
                    )
                }
            }
        )
        revocationWorker = AppleRevocationWorker(
            sender: revocations,
            intervalMilliseconds: revocationIntervalMilliseconds,
            clock: clock,
            onError: { error in
                log.log("error", "apple revocation pass failed", [("cause", .string(error.description))])
            }
        )
        if let period = settings.appleLinkCheckSeconds {
            linkCheckWorker = Self.linkCheckWorker(
                period: period,
                rate: settings.appleLinkCheckRate,
                store: store,
                secrets: secrets,
                apple: apple.revocations,
                transfers: transfers,
                metrics: metrics,
                log: log,
                clock: clock
            )
        } else {
            linkCheckWorker = nil
        }
        var endpoint: WebhookSender.Endpoint?
        if let url = settings.webhookURL, let secrets = settings.webhookSecrets {
            endpoint = WebhookSender.Endpoint(url: url, secrets: secrets)
        }
        let webhooks = WebhookSender(
            store: store,
            endpoint: endpoint,
            policy: webhookPolicy,
            onEvent: { event in
                switch event {
                case .delivered(let id, let type, let attempts):
                    metrics.recordWebhook(.delivered)
                    log.log(
                        "info",
                        "webhook delivered",
                        [("webhook", .string(id)), ("type", .string(type)), ("attempts", .integer(attempts))]
                    )
                case .deferred(let id, let attempts, let reason, let nextAttemptAt):
                    metrics.recordWebhook(.deferred)
                    log.log(
                        "info",
                        "webhook deferred",
                        [
                            ("webhook", .string(id)), ("attempts", .integer(attempts)), ("reason", .string(reason)),
                            ("nextAttemptAt", .integer(nextAttemptAt)),
                        ]
                    )
                case .failed(let id, let attempts, let reason):
                    metrics.recordWebhook(.failed)
                    log.log(
                        "error",
                        "webhook failed",
                        [("webhook", .string(id)), ("attempts", .integer(attempts)), ("reason", .string(reason))]
                    )
                }
            }
        )
        self.webhooks = webhooks
        webhookWorker = QueueWorker(
            intervalMilliseconds: webhookIntervalMilliseconds,
            onError: { error in log.log("error", "webhook pass failed", [("cause", .string(error.description))]) },
            pass: { () async throws(StorageError) in try await webhooks.drain(clock: clock) }
        )
        let adminTokens = Reloadable(settings.adminTokens)
        self.adminTokens = adminTokens
        let handler = UpgradeAPIHandler(
            upgrades: service,
            transfers: transfers,
            signIns: signIns,
            notifications: notifications,
            store: store,
            auditCursors: AuditCursors(secrets: secrets),
            revocations: revocations,
            // Provisioned `appleSub` links record the first client id; under --dev with none set,
            // the emulator's, which its tokens carry (the audiences above accept it the same way).
            appleClientID: settings.clientIDs.first ?? (settings.development ? DevelopmentEnvironment.clientID : nil),
            clock: clock,
            metrics: metrics,
            log: log,
            adminThrottle: settings.adminThrottle,
            trustedProxies: settings.trustedProxies,
            reloadableAdminTokens: adminTokens,
            statistics: { statistics.server?.statistics },
            keyIDs: { secrets.keyIDs },
            // Development only: insecure by design (a published key, a public demo account), as its
            // banner says; open metrics tell nothing those do not.
            openMetrics: settings.development
        )
        operations = handler.operations
        let server = HTTPServer(configuration: configuration, handler: handler)
        self.server = server
        statistics.server = server
        let host = settings.host
        let instance = ServeInstanceBeacon(store: store, secrets: secrets, listen: { "\(host):\(server.port)" })
        self.instance = instance
        instanceWorker = QueueWorker(
            intervalMilliseconds: Int(RunningKeyrings.heartbeatSeconds) * 1000,
            onError: { Self.heartbeatFailed($0, log) },
            pass: { () async throws(StorageError) in try instance.beat() }
        )
        healthServer = settings.healthListen.map { listen in
            HTTPServer(
                configuration: Self.sideConfiguration(.health, settings, listen, log: log),
                handler: HealthCheckHandler(api: handler)
            )
        }
        if let listen = settings.consoleListen {
            let console = ConsoleHandler(
                store: store,
                adminTokens: adminTokens,
                adminThrottle: settings.adminThrottle,
                trustedProxies: settings.trustedProxies,
                secureCookies: !ServerSettings.isLoopback(listen.host),
                revocations: revocations,
                clock: clock,
                log: log
            )
            consoleServer = HTTPServer(
                configuration: Self.sideConfiguration(.console, settings, listen, log: log),
                handler: console
            )
        } else {
            consoleServer = nil
        }
    }

    /// The Apple link check (docs/architecture.md, "The Apple link check"): one pass a second, each
    /// check counted in the metrics, each link ended or failed and each pause logged. A valid check
    /// is counted only: a million links make a million of them a day.
    static func linkCheckWorker(
        period: Int64,
        rate: Double,
        store: any UpgradeStore,
        secrets: SecretBox,
        apple: AppleClient,
        transfers: TransferService,
        metrics: Metrics,
        log: RequestLog,
        clock: @escaping @Sendable () -> Int64
    ) -> AppleLinkCheckWorker {
        var policy = AppleLinkChecker.Policy(checksPerSecond: rate)
        policy.periodSeconds = period
        let checker = AppleLinkChecker(
            store: store,
            secrets: secrets,
            apple: apple,
            transfers: transfers,
            policy: policy,
            onEvent: { event in
                switch event {
                case .checked(let accountID, let outcome, let changed, let reason, let nextDueAt):
                    metrics.recordAppleLinkCheck(outcome)
                    guard outcome != .valid else { return }
                    var fields: [(String, JSONValue)] = [
                        ("account", .string(accountID)), ("outcome", .string(outcome.rawValue)),
                        ("nextDueAt", .integer(nextDueAt)),
                    ]
                    if outcome == .revoked { fields.append(("linkEnded", .bool(changed))) }
                    if let reason { fields.append(("reason", .string(reason))) }
                    log.log(outcome == .revoked ? "info" : "warning", "apple link check", fields)
                case .paused(let until, let reason):
                    log.log(
                        "warning",
                        "apple link checks paused",
                        [("until", .integer(until)), ("reason", .string(reason))]
                    )
                }
            }
        )
        return AppleLinkCheckWorker(
            checker: checker,
            clock: clock,
            onError: { error in
                log.log("error", "apple link check pass failed", [("cause", .string(error.description))])
            }
        )
    }

    /// A small server of its own for a side listener (the health probes, the support console): its
    /// own connection table and few threads, so a flood on the API listener does not reach it. It
    /// takes no shutdown signals; `stop()` ends it after the API server.
    struct SideListener {
        let name: String
        let workers: Int
        let queue: Int
        let connections: Int
        let perClient: Int

        /// A probe needs a connection or two.
        static let health = SideListener(name: "health-server", workers: 2, queue: 16, connections: 64, perClient: 8)
        /// A few members of staff.
        static let console = SideListener(
            name: "console-server",
            workers: 4,
            queue: 64,
            connections: 256,
            perClient: 32
        )
    }

    static func sideConfiguration(
        _ side: SideListener,
        _ settings: ServerSettings,
        _ listen: (host: String, port: Int),
        log: RequestLog
    ) -> HTTPServer.Configuration {
        var configuration = HTTPServer.Configuration()
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.eventLoopCount = 1
        configuration.workerCount = side.workers
        configuration.workerQueueCapacity = side.queue
        configuration.maxConnections = side.connections
        configuration.maxConnectionsPerClient = min(side.perClient, settings.maxConnectionsPerClient)
        configuration.connectionLimitExemptPeers = settings.trustedProxies
        configuration.onEvent = { event in log.log("info", side.name, [("event", .string(event.description))]) }
        return configuration
    }

    /// Starts the API server, then the health and console listeners if there are; if one cannot
    /// start, those already started are stopped again. The error names the setting whose address failed.
    public func start() throws(StartFailure) {
        do {
            try server.start()
        } catch {
            throw StartFailure(variable: "UPGRADE_LISTEN", host: settings.host, port: settings.port, error: error)
        }
        if let healthServer, let listen = settings.healthListen {
            do {
                try healthServer.start()
            } catch {
                server.shutdown()
                server.wait()
                throw StartFailure(
                    variable: "UPGRADE_HEALTH_LISTEN",
                    host: listen.host,
                    port: listen.port,
                    error: error
                )
            }
        }
        if let consoleServer, let listen = settings.consoleListen {
            do {
                try consoleServer.start()
            } catch {
                server.shutdown()
                server.wait()
                healthServer?.shutdown()
                healthServer?.wait()
                throw StartFailure(
                    variable: "UPGRADE_CONSOLE_LISTEN",
                    host: listen.host,
                    port: listen.port,
                    error: error
                )
            }
        }
        revocationWorker.start()
        linkCheckWorker?.start()
        if settings.webhookURL != nil { webhookWorker.start() }
        // The first row before start() returns, so that `keys reseal` sees a started instance.
        recordInstance()
        instanceWorker.start()
    }

    /// Writes this instance's `serve_instances` row now (at start, after a keyring reload); a
    /// failure is logged, and the next heartbeat tries again.
    func recordInstance() {
        do {
            try instance.beat()
        } catch {
            Self.heartbeatFailed(error, log)
        }
    }

    static func heartbeatFailed(_ error: StorageError, _ log: RequestLog) {
        log.log("error", "serve instance heartbeat failed", [("cause", .string(error.description))])
    }

    /// Why `start()` failed: the listener's setting, its address and the server's error.
    public struct StartFailure: Error, Sendable, CustomStringConvertible {
        public let variable: String
        public let host: String
        public let port: Int
        public let error: HTTPServerError

        public var description: String { "\(variable): cannot listen on \(host):\(port): \(error)" }
    }

    /// Stops the API server (finishing in-flight requests), the revocation and webhook workers
    /// (finishing their passes), deletes this instance's `serve_instances` row, then the health and
    /// console listeners and the development emulator.
    public func stop() {
        server.shutdown()
        server.wait()
        revocationWorker.stop()
        linkCheckWorker?.stop()
        webhookWorker.stop()
        instanceWorker.stop()
        do {
            try instance.remove()
        } catch {
            // Forgotten anyway once RunningKeyrings.liveSeconds pass without a heartbeat.
            log.log("warning", "serve instance row not removed", [("cause", .string(error.description))])
        }
        healthServer?.shutdown()
        healthServer?.wait()
        consoleServer?.shutdown()
        consoleServer?.wait()
        development?.stop()
    }
}

/// Lets the handler sample the server it is served by, which exists only after the handler.
/// Written once before the server starts, read afterwards; the lock keeps that ordering explicit.
final class StatisticsBox: @unchecked Sendable {
    private let lock = NSLock()
    private weak var stored: HTTPServer?
    var server: HTTPServer? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
