import Foundation
import UpgradeEngine

/// `upgrade-cli serve`'s configuration (README, Configuration): environment variables, each overridable by a
/// `--flag`. `load` validates everything before anything is opened and reports every problem at
/// once, one line each, naming the variable and how to fix it.
public struct ServerSettings: Sendable {
    public var database: DatabaseLocation
    public var host: String
    public var port: Int
    public var appleBaseURL: URL
    public var clientIDs: [String]
    public var teamID: String?
    public var keyID: String?
    /// `APPLE_KEY_ID_FILE`: a file holding the key id instead of `APPLE_KEY_ID`, so that a reload
    /// can switch the key and its id together (README, "Rotating the Apple key").
    public var keyIDFile: String? = nil
    public var privateKeyFile: String?
    public var secretKeyFile: String?
    /// The key read from `privateKeyFile` while validating: the one checked is the one used.
    public var privateKey: P256PrivateKey?
    /// The box opened from `secretKeyFile` while validating; nil means the development key (`--dev` only).
    public var secrets: SecretBox?
    public var development: Bool
    /// Failed credential checks allowed per client (`UPGRADE_CLIENT_THROTTLE`); nil when `off`.
    public var clientThrottle: ClientThrottle.Policy?
    /// Wrong admin tokens allowed per client (`UPGRADE_ADMIN_THROTTLE`), a count of their own; nil
    /// when `off`. A valid token is never throttled.
    public var adminThrottle: ClientThrottle.Policy? = .default
    /// Reverse proxies whose `X-Forwarded-For` is believed (`UPGRADE_TRUSTED_PROXIES`); they are also
    /// exempt from `maxConnectionsPerClient`.
    public var trustedProxies: TrustedProxies
    /// Open connections allowed per client address (`UPGRADE_MAX_CONNECTIONS_PER_CLIENT`).
    public var maxConnectionsPerClient: Int
    /// A separate listener for `/healthz` and `/readyz` only (`UPGRADE_HEALTH_LISTEN`); nil for none.
    public var healthListen: (host: String, port: Int)?
    /// The support console's listener (`UPGRADE_CONSOLE_LISTEN`); nil: no console.
    public var consoleListen: (host: String, port: Int)? = nil
    /// `--dev` only: the emulator's loopback port (0 picks a free one).
    public var emulatorPort: Int
    /// How long a claimed conversion may take before other calls treat it as interrupted
    /// (`UPGRADE_CONVERSION_TIMEOUT`, seconds).
    public var conversionTimeout: Int64
    /// `UPGRADE_ADMIN_TOKENS_FILE`, and the tokens read from it while validating. `serve` reads the
    /// file at start-up and again on each reload (`SIGHUP`).
    public var adminTokensFile: String?
    public var adminTokens: AdminTokenSet?
    /// What a changed password must meet (`UPGRADE_PASSWORD_RULES`, or the file
    /// `UPGRADE_PASSWORD_RULES_FILE`, which a reload reads again; Apple's password-rules syntax).
    public var passwordRules: PasswordRules
    public var passwordRulesFile: String? = nil
    /// How soon a refused credential check may be answered at the earliest
    /// (`UPGRADE_FAILURE_FLOOR_MS`); nil for the default derived from the hash limits.
    public var failureFloor: Duration? = nil
    /// Where signed webhooks go (`UPGRADE_WEBHOOK_URL`), and the secrets read from
    /// `UPGRADE_WEBHOOK_SECRET_FILE` while validating; all nil when webhooks are off.
    public var webhookURL: String? = nil
    public var webhookSecrets: WebhookSecrets? = nil
    public var webhookSecretFile: String? = nil
    /// The legacy login system that checks `legacyPassword` accounts (`UPGRADE_LEGACY_VERIFY_URL`,
    /// `UPGRADE_LEGACY_VERIFY_SECRET_FILE`, `UPGRADE_LEGACY_VERIFY_TIMEOUT`,
    /// `UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE`); nil when not set.
    public var legacyVerify: LegacyPasswordVerifier.Endpoint? = nil
    public var legacyVerifySecretFile: String? = nil
    /// `UPGRADE_LEGACY_CREATE`: unknown usernames are asked about too and created on a match.
    public var legacyCreate = false
    /// How often each Apple link's refresh token is checked with Apple, at most
    /// (`UPGRADE_APPLE_LINK_CHECK_SECONDS`); nil when `off`.
    public var appleLinkCheckSeconds: Int64? = Self.defaultAppleLinkCheckSeconds
    /// Apple asks for at most one check of a refresh token a day.
    public static let defaultAppleLinkCheckSeconds: Int64 = 86_400
    /// Apple link checks started per second on this instance, at most
    /// (`UPGRADE_APPLE_LINK_CHECK_RATE`; docs/architecture.md §7.6). Fixed at start.
    public var appleLinkCheckRate: Double = AppleLinkChecker.Policy().checksPerSecond
    /// How long the oldest request waiting for an API worker may have waited before new ones are
    /// answered `503 server-busy` (`UPGRADE_MAX_QUEUE_DELAY_MS`; docs/architecture.md §11.6). Fixed at start.
    public var maxQueueDelay: Duration = HTTPServer.Configuration().maxQueueDelay

    /// The variables and their `--flag` spellings.
    public static let variables: [(variable: String, flag: String)] = [
        ("UPGRADE_DB", "--db"), ("UPGRADE_LISTEN", "--listen"), ("APPLE_BASE_URL", "--apple-base-url"),
        ("APPLE_CLIENT_IDS", "--client-ids"), ("APPLE_TEAM_ID", "--team-id"), ("APPLE_KEY_ID", "--key-id"),
        ("APPLE_KEY_ID_FILE", "--key-id-file"),
        ("APPLE_PRIVATE_KEY_FILE", "--private-key-file"), ("UPGRADE_SECRET_KEY_FILE", "--secret-key-file"),
        ("UPGRADE_DEV_EMULATOR_PORT", "--emulator-port"),
        ("UPGRADE_CLIENT_THROTTLE", "--client-throttle"), ("UPGRADE_ADMIN_THROTTLE", "--admin-throttle"),
        ("UPGRADE_TRUSTED_PROXIES", "--trusted-proxies"),
        ("UPGRADE_MAX_CONNECTIONS_PER_CLIENT", "--max-connections-per-client"),
        ("UPGRADE_HEALTH_LISTEN", "--health-listen"), ("UPGRADE_CONSOLE_LISTEN", "--console-listen"),
        ("UPGRADE_CONVERSION_TIMEOUT", "--conversion-timeout"),
        ("UPGRADE_ADMIN_TOKENS_FILE", "--admin-tokens-file"),
        ("UPGRADE_PASSWORD_RULES", "--password-rules"), ("UPGRADE_PASSWORD_RULES_FILE", "--password-rules-file"),
        ("UPGRADE_FAILURE_FLOOR_MS", "--failure-floor-ms"),
        ("UPGRADE_WEBHOOK_URL", "--webhook-url"), ("UPGRADE_WEBHOOK_SECRET_FILE", "--webhook-secret-file"),
        ("UPGRADE_LEGACY_VERIFY_URL", "--legacy-verify-url"),
        ("UPGRADE_LEGACY_VERIFY_SECRET_FILE", "--legacy-verify-secret-file"),
        ("UPGRADE_LEGACY_VERIFY_TIMEOUT", "--legacy-verify-timeout"),
        ("UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE", "--legacy-verify-outage-pause"),
        ("UPGRADE_LEGACY_CREATE", "--legacy-create"),
        ("UPGRADE_APPLE_LINK_CHECK_SECONDS", "--apple-link-check-seconds"),
        ("UPGRADE_APPLE_LINK_CHECK_RATE", "--apple-link-check-rate"),
        ("UPGRADE_MAX_QUEUE_DELAY_MS", "--max-queue-delay-ms"),
    ]

    /// Variables of features this build does not have yet. Each is refused when set rather than
    /// ignored, so nobody believes they configured something; their flags are unknown options.
    public static let unavailableVariables: [(variable: String, reason: String)] = []

    public static let appleProductionURL = "https://appleid.apple.com"

    /// A setting as every command reads it: surrounding blanks dropped, a blank value unset.
    public static func setting(_ name: String, in values: [String: String]) -> String? {
        guard let text = values[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }

    /// Reads and validates. `values` maps variable names to values (flags already folded in).
    /// Throws `ServerSettingsError` listing every problem.
    public static func load(_ values: [String: String], development: Bool) throws(ServerSettingsError) -> ServerSettings
    {
        var problems: [String] = []
        func value(_ name: String) -> String? { setting(name, in: values) }

        var database = development ? DatabaseLocation.development : DatabaseLocation.default
        if let text = value("UPGRADE_DB") {
            do {
                database = try DatabaseLocation.parse(text)
            } catch {
                problems.append("UPGRADE_DB: \(error.message)")
            }
        }

        var host = "127.0.0.1"
        var port = 8080
        if let text = value("UPGRADE_LISTEN") {
            if let (parsedHost, parsedPort) = parseListen(text) {
                (host, port) = (parsedHost, parsedPort)
            } else {
                problems.append(
                    "UPGRADE_LISTEN: expected ADDRESS:PORT with a port from 0 to 65535, e.g. 127.0.0.1:8080"
                )
            }
        }

        var appleBaseURL = URL(string: appleProductionURL)!
        if let text = value("APPLE_BASE_URL") {
            switch validateAppleBaseURL(text) {
            case .success(let url): appleBaseURL = url
            case .failure(let problem): problems.append(problem.message)
            }
        }

        var clientIDs: [String] = []
        if let text = value("APPLE_CLIENT_IDS") {
            clientIDs = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if clientIDs.isEmpty
                || clientIDs.contains(where: { !ClientSecretSigner.isClientID($0) || $0.contains(",") })
            {
                problems.append(
                    "APPLE_CLIENT_IDS: each entry must be a bundle id or Services id such as com.example.app"
                )
            }
        } else if !development {
            problems.append(
                "APPLE_CLIENT_IDS: required; the comma-separated bundle ids and Services ids whose identity tokens are accepted"
            )
        }

        let teamID = value("APPLE_TEAM_ID")
        var keyID = value("APPLE_KEY_ID")
        let keyIDFile = value("APPLE_KEY_ID_FILE")
        if let keyIDFile {
            if keyID != nil {
                problems.append("APPLE_KEY_ID_FILE: give APPLE_KEY_ID or APPLE_KEY_ID_FILE, not both")
            } else {
                switch readKeyID(path: keyIDFile) {
                case .success(let id): keyID = id
                case .failure(let problem): problems.append(problem.message)
                }
            }
        }
        let privateKeyFile = value("APPLE_PRIVATE_KEY_FILE")
        if !development {
            if teamID == nil {
                problems.append("APPLE_TEAM_ID: required to exchange authorization codes; your 10-character Team ID")
            }
            if keyID == nil && keyIDFile == nil {
                problems.append(
                    "APPLE_KEY_ID: required to exchange authorization codes; the 10-character id of your Sign in with Apple key"
                )
            }
            if privateKeyFile == nil {
                problems.append(
                    "APPLE_PRIVATE_KEY_FILE: required to exchange authorization codes; the .p8 key file (PKCS#8 PEM)"
                )
            }
        }
        if let teamID, !ClientSecretSigner.isAppleIdentifier(teamID) {
            problems.append("APPLE_TEAM_ID: must be 10 characters A-Z and 0-9")
        }
        if keyIDFile == nil, let keyID, !ClientSecretSigner.isAppleIdentifier(keyID) {
            problems.append("APPLE_KEY_ID: must be 10 characters A-Z and 0-9")
        }
        var privateKey: P256PrivateKey?
        if let privateKeyFile {
            switch readPrivateKey(path: privateKeyFile) {
            case .success(let key): privateKey = key
            case .failure(let problem): problems.append(problem.message)
            }
        }

        let secretKeyFile = value("UPGRADE_SECRET_KEY_FILE")
        var secrets: SecretBox?
        if let secretKeyFile {
            do { secrets = try SecretKeyFile.load(path: secretKeyFile) } catch { problems.append(error.message) }
        } else if !development {
            problems.append("UPGRADE_SECRET_KEY_FILE: required outside --dev; \(SecretKeyFile.howToCreate)")
        }

        for (variable, reason) in unavailableVariables where value(variable) != nil {
            problems.append("\(variable): \(reason)")
        }

        func throttlePolicy(_ variable: String) -> ClientThrottle.Policy? {
            guard let text = value(variable) else { return .default }
            if text == "off" { return nil }
            if let policy = ClientThrottle.Policy(text) { return policy }
            problems.append(
                "\(variable): expected FAILURES/SECONDS (1 to 100000 failures over 1 to 604800 s), e.g. 20/600, or off"
            )
            return nil
        }
        let clientThrottle = throttlePolicy("UPGRADE_CLIENT_THROTTLE")
        let adminThrottle = throttlePolicy("UPGRADE_ADMIN_THROTTLE")

        var trustedProxies = TrustedProxies.none
        if let text = value("UPGRADE_TRUSTED_PROXIES") {
            if let parsed = TrustedProxies(text) {
                trustedProxies = parsed
            } else {
                problems.append(
                    "UPGRADE_TRUSTED_PROXIES: expected a comma list of addresses or CIDR ranges with zero host bits, e.g. 10.0.0.0/8,::1"
                )
            }
        }

        let connectionCap = HTTPServer.Configuration().maxConnections
        var maxConnectionsPerClient = HTTPServer.Configuration().maxConnectionsPerClient
        if let text = value("UPGRADE_MAX_CONNECTIONS_PER_CLIENT") {
            if let limit = Self.wholeNumber(text, in: 1...Int64(connectionCap)) {
                maxConnectionsPerClient = Int(limit)
            } else {
                problems.append(
                    "UPGRADE_MAX_CONNECTIONS_PER_CLIENT: expected a whole number from 1 to \(connectionCap) (the server's connection cap), e.g. 64"
                )
            }
        }

        var healthListen: (host: String, port: Int)?
        if let text = value("UPGRADE_HEALTH_LISTEN") {
            if let (healthHost, healthPort) = parseListen(text), HTTPClientAddress(healthHost) != nil {
                if healthHost == host && healthPort == port && port != 0 {
                    problems.append(
                        "UPGRADE_HEALTH_LISTEN: must differ from UPGRADE_LISTEN (\(host):\(port)); it is a second listener"
                    )
                } else {
                    healthListen = (healthHost, healthPort)
                }
            } else {
                problems.append(
                    "UPGRADE_HEALTH_LISTEN: expected a numeric ADDRESS:PORT with a port from 0 to 65535, e.g. 127.0.0.1:8081"
                )
            }
        }

        var consoleListen: (host: String, port: Int)?
        if let text = value("UPGRADE_CONSOLE_LISTEN") {
            if let (consoleHost, consolePort) = parseListen(text), HTTPClientAddress(consoleHost) != nil {
                let taken = [(host, port)] + (healthListen.map { [($0.host, $0.port)] } ?? [])
                if consolePort != 0, taken.contains(where: { $0.0 == consoleHost && $0.1 == consolePort }) {
                    problems.append(
                        "UPGRADE_CONSOLE_LISTEN: must differ from UPGRADE_LISTEN and UPGRADE_HEALTH_LISTEN; it is a listener of its own"
                    )
                } else {
                    consoleListen = (consoleHost, consolePort)
                }
            } else {
                problems.append(
                    "UPGRADE_CONSOLE_LISTEN: expected a numeric ADDRESS:PORT with a port from 0 to 65535, e.g. 127.0.0.1:8082"
                )
            }
        }

        var emulatorPort = 8081
        if let text = value("UPGRADE_DEV_EMULATOR_PORT") {
            if !development {
                problems.append(
                    "UPGRADE_DEV_EMULATOR_PORT: only meaningful with --dev; point APPLE_BASE_URL at an emulator instead"
                )
            } else if let port = Int(text), (0...65535).contains(port) {
                emulatorPort = port
            } else {
                problems.append("UPGRADE_DEV_EMULATOR_PORT: expected a port from 0 to 65535")
            }
        }

        var conversionTimeout = UpgradePolicy.default.conversionLifetime
        if let text = value("UPGRADE_CONVERSION_TIMEOUT") {
            // Apple's authorization code lives 5 minutes, so a longer claim would only delay the answer.
            if let seconds = Int64(text), (1...300).contains(seconds) {
                conversionTimeout = seconds
            } else {
                problems.append("UPGRADE_CONVERSION_TIMEOUT: expected whole seconds from 1 to 300, e.g. 120")
            }
        }

        let adminTokensFile = value("UPGRADE_ADMIN_TOKENS_FILE")
        var adminTokens: AdminTokenSet?
        if let adminTokensFile {
            do { adminTokens = try AdminTokenFile.load(path: adminTokensFile) } catch { problems.append(error.message) }
        }

        var passwordRules = PasswordRules.default
        let passwordRulesFile = value("UPGRADE_PASSWORD_RULES_FILE")
        if let text = value("UPGRADE_PASSWORD_RULES") {
            if passwordRulesFile != nil {
                problems.append(
                    "UPGRADE_PASSWORD_RULES_FILE: give UPGRADE_PASSWORD_RULES or UPGRADE_PASSWORD_RULES_FILE, not both"
                )
            }
            do { passwordRules = try PasswordRules(text) } catch {
                problems.append(
                    "UPGRADE_PASSWORD_RULES: \(error.message) (Apple's password-rules syntax, e.g. \(PasswordRules.defaultText))"
                )
            }
        } else if let passwordRulesFile {
            switch readPasswordRules(path: passwordRulesFile) {
            case .success(let rules): passwordRules = rules
            case .failure(let problem): problems.append(problem.message)
            }
        }

        var failureFloor: Duration?
        if let text = value("UPGRADE_FAILURE_FLOOR_MS") {
            // Below the costliest admitted check, a refusal's timing tells which hash an account has.
            if let milliseconds = Self.wholeNumber(text, in: 0...10_000) {
                failureFloor = .milliseconds(milliseconds)
            } else {
                problems.append(
                    "UPGRADE_FAILURE_FLOOR_MS: expected whole milliseconds from 0 to 10000, e.g. \(Self.defaultFailureFloorMilliseconds) (the default)"
                )
            }
        }

        let webhookURL = value("UPGRADE_WEBHOOK_URL")
        var webhookSecrets: WebhookSecrets?
        if let webhookURL, let problem = validateWebhookURL(webhookURL) { problems.append(problem) }
        switch (webhookURL, value(WebhookSecret.environmentVariable)) {
        case (nil, nil):
            break
        case (.some, nil):
            problems.append(
                "\(WebhookSecret.environmentVariable): required with UPGRADE_WEBHOOK_URL; \(WebhookSecret.howToCreate)"
            )
        case (nil, .some):
            problems.append(
                "UPGRADE_WEBHOOK_URL: required with \(WebhookSecret.environmentVariable); the backend's webhook endpoint"
            )
        case (.some, .some(let path)):
            do { webhookSecrets = try WebhookSecrets.load(path: path) } catch { problems.append(error.message) }
        }

        let (legacyVerify, legacyCreate) = legacySettings(value, &problems)

        var appleLinkCheckSeconds: Int64? = Self.defaultAppleLinkCheckSeconds
        if let text = value("UPGRADE_APPLE_LINK_CHECK_SECONDS") {
            // At least 10 s so that tests can shorten it; Apple asks for at most one check a day.
            if text == "off" || text == "0" {
                appleLinkCheckSeconds = nil
            } else if let seconds = Self.wholeNumber(text, in: 10...31_536_000) {
                appleLinkCheckSeconds = seconds
            } else {
                problems.append(
                    "UPGRADE_APPLE_LINK_CHECK_SECONDS: expected whole seconds from 10 to 31536000 (86400, a day, is the default), or off"
                )
            }
        }

        let appleLinkCheckRate = Self.appleLinkCheckRate(value("UPGRADE_APPLE_LINK_CHECK_RATE"), &problems)
        let maxQueueDelay = Self.maxQueueDelay(value("UPGRADE_MAX_QUEUE_DELAY_MS"), &problems)

        guard problems.isEmpty else { throw ServerSettingsError(problems: problems) }
        var settings = ServerSettings(
            database: database,
            host: host,
            port: port,
            appleBaseURL: appleBaseURL,
            clientIDs: clientIDs,
            teamID: teamID,
            keyID: keyID,
            privateKeyFile: privateKeyFile,
            secretKeyFile: secretKeyFile,
            privateKey: privateKey,
            secrets: secrets,
            development: development,
            clientThrottle: clientThrottle,
            adminThrottle: adminThrottle,
            trustedProxies: trustedProxies,
            maxConnectionsPerClient: maxConnectionsPerClient,
            healthListen: healthListen,
            emulatorPort: emulatorPort,
            conversionTimeout: conversionTimeout,
            adminTokensFile: adminTokensFile,
            adminTokens: adminTokens,
            passwordRules: passwordRules,
            failureFloor: failureFloor,
            webhookURL: webhookURL,
            webhookSecrets: webhookSecrets
        )
        settings.keyIDFile = keyIDFile
        settings.passwordRulesFile = passwordRulesFile
        settings.webhookSecretFile = webhookSecrets == nil ? nil : value(WebhookSecret.environmentVariable)
        settings.legacyVerifySecretFile = legacyVerify == nil ? nil : value("UPGRADE_LEGACY_VERIFY_SECRET_FILE")
        settings.legacyVerify = legacyVerify
        settings.legacyCreate = legacyCreate
        settings.appleLinkCheckSeconds = appleLinkCheckSeconds
        settings.appleLinkCheckRate = appleLinkCheckRate
        settings.maxQueueDelay = maxQueueDelay
        settings.consoleListen = consoleListen
        return settings
    }

    /// `UPGRADE_APPLE_LINK_CHECK_RATE`: checks per second, a decimal from 0.001 (86 a day; the
    /// checker paces no slower) to 1000; problems appended.
    static func appleLinkCheckRate(_ text: String?, _ problems: inout [String]) -> Double {
        let rate = AppleLinkChecker.Policy().checksPerSecond
        guard let text else { return rate }
        if let parsed = decimal(text, in: 0.001...1000) { return parsed }
        problems.append(
            "UPGRADE_APPLE_LINK_CHECK_RATE: expected checks per second per instance, a decimal number from 0.001 to 1000, e.g. 10 (the default)"
        )
        return rate
    }

    /// `text` as a whole number in `range`: ASCII digits only (no sign, space or exponent).
    static func wholeNumber(_ text: String, in range: ClosedRange<Int64>) -> Int64? {
        guard text.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int64(text), range.contains(number)
        else { return nil }
        return number
    }

    /// `text` as a decimal number in `range`: ASCII digits and points only (no sign, space or exponent).
    static func decimal(_ text: String, in range: ClosedRange<Double>) -> Double? {
        guard text.utf8.allSatisfy({ (48...57).contains($0) || $0 == UInt8(ascii: ".") }), let number = Double(text),
            number.isFinite, range.contains(number)
        else { return nil }
        return number
    }

    /// `UPGRADE_MAX_QUEUE_DELAY_MS`: whole milliseconds from 10 to 60000; problems appended.
    static func maxQueueDelay(_ text: String?, _ problems: inout [String]) -> Duration {
        let delay = HTTPServer.Configuration().maxQueueDelay
        guard let text else { return delay }
        if let milliseconds = wholeNumber(text, in: 10...60_000) { return .milliseconds(milliseconds) }
        problems.append(
            "UPGRADE_MAX_QUEUE_DELAY_MS: expected whole milliseconds from 10 to 60000, e.g. 500 (the default)"
        )
        return delay
    }

    /// The legacy login system's settings (docs/legacy-verification.md); problems appended.
    static func legacySettings(
        _ value: (String) -> String?,
        _ problems: inout [String]
    ) -> (LegacyPasswordVerifier.Endpoint?, Bool) {
        let secretVariable = "UPGRADE_LEGACY_VERIFY_SECRET_FILE"
        var create = false
        switch value("UPGRADE_LEGACY_CREATE") {
        case nil, "off": break
        case "on": create = true
        default: problems.append("UPGRADE_LEGACY_CREATE: expected on or off (the default)")
        }
        var timeout = Duration.seconds(3)
        if let text = value("UPGRADE_LEGACY_VERIFY_TIMEOUT") {
            if let seconds = decimal(text, in: 0.5...10) {
                timeout = .milliseconds(Int64((seconds * 1000).rounded()))
            } else {
                problems.append("UPGRADE_LEGACY_VERIFY_TIMEOUT: expected seconds from 0.5 to 10, e.g. 3 (the default)")
            }
        }
        var pause = Duration.seconds(30)
        if let text = value("UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE") {
            if let seconds = wholeNumber(text, in: 1...300) {
                pause = .seconds(seconds)
            } else {
                problems.append(
                    "UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE: expected whole seconds from 1 to 300, e.g. 30 (the default)"
                )
            }
        }
        guard let url = value("UPGRADE_LEGACY_VERIFY_URL") else {
            if value(secretVariable) != nil {
                problems.append(
                    "UPGRADE_LEGACY_VERIFY_URL: required with \(secretVariable); the legacy system's endpoint"
                )
            }
            if create {
                problems.append(
                    "UPGRADE_LEGACY_CREATE: on needs UPGRADE_LEGACY_VERIFY_URL, the legacy system that vouches for new users"
                )
            }
            return (nil, false)
        }
        if let refusal = validateOutboundURL(
            url,
            variable: "UPGRADE_LEGACY_VERIFY_URL",
            example: "https://login.example.com/password-verify"
        ) {
            problems.append(refusal)
        }
        guard let path = value(secretVariable) else {
            problems.append(
                "\(secretVariable): required with UPGRADE_LEGACY_VERIFY_URL (the requests are signed); "
                    + WebhookSecret.howToCreate
            )
            return (nil, false)
        }
        do {
            let secrets = try WebhookSecrets.load(path: path, variable: secretVariable)
            return (
                LegacyPasswordVerifier.Endpoint(url: url, secrets: secrets, timeout: timeout, outagePause: pause),
                create
            )
        } catch {
            problems.append(error.message)
            return (nil, false)
        }
    }

    /// The key id in `APPLE_KEY_ID_FILE`: one line, 10 characters A-Z and 0-9 (not a secret, so any mode).
    public static func readKeyID(path: String) -> Result<String, ServerSettingsError> {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(ServerSettingsError(problems: ["APPLE_KEY_ID_FILE: cannot read \(path)"]))
        }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard ClientSecretSigner.isAppleIdentifier(id) else {
            return .failure(
                ServerSettingsError(problems: [
                    "APPLE_KEY_ID_FILE: \(path) must hold the key id alone, 10 characters A-Z and 0-9"
                ])
            )
        }
        return .success(id)
    }

    /// The P-256 key in `APPLE_PRIVATE_KEY_FILE` (`.p8`, PKCS#8 PEM): it signs as the team, so it is
    /// held to what the other secret files are (a regular file only its owner may access).
    public static func readPrivateKey(path: String) -> Result<P256PrivateKey, ServerSettingsError> {
        let name = "APPLE_PRIVATE_KEY_FILE=\(path)"
        let pem: String
        do {
            // A .p8 is about 250 bytes; a few KiB leaves room for comments and line endings.
            pem = try OwnerOnlyFile.read(path: path, limit: 16 * 1024)
        } catch {
            return .failure(ServerSettingsError(problems: ["\(name): \(error.message)"]))
        }
        guard let key = try? P256PrivateKey(pem: pem) else {
            return .failure(
                ServerSettingsError(problems: [
                    "\(name): not a P-256 private key in PKCS#8 PEM; expected the .p8 key Apple issued"
                ])
            )
        }
        return .success(key)
    }

    /// The rules in `UPGRADE_PASSWORD_RULES_FILE`: Apple's password-rules syntax, `#` lines ignored.
    public static func readPasswordRules(path: String) -> Result<PasswordRules, ServerSettingsError> {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(ServerSettingsError(problems: ["UPGRADE_PASSWORD_RULES_FILE: cannot read \(path)"]))
        }
        let rules = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }.joined(separator: " ")
        do {
            return .success(try PasswordRules(rules))
        } catch {
            return .failure(
                ServerSettingsError(problems: [
                    "UPGRADE_PASSWORD_RULES_FILE: \(path): \(error.message) (Apple's password-rules syntax, e.g. \(PasswordRules.defaultText))"
                ])
            )
        }
    }

    /// `UPGRADE_FAILURE_FLOOR_MS`'s default: `PasswordHashLimits.failureFloor` of the default limits.
    public static var defaultFailureFloorMilliseconds: Int64 {
        let floor = PasswordHashLimits.default.failureFloor.components
        return floor.seconds * 1000 + floor.attoseconds / 1_000_000_000_000_000
    }

    /// `https://` anywhere, or `http://` to a loopback address only: the payloads name accounts.
    static func validateWebhookURL(_ text: String) -> String? {
        validateOutboundURL(
            text,
            variable: "UPGRADE_WEBHOOK_URL",
            example: "https://backend.example.com/webhooks/upgrade"
        )
    }

    /// A URL this server sends accounts' data (webhooks) or passwords (the legacy login system) to:
    /// `https://` anywhere, or `http://` to a loopback address only; no user, password or fragment.
    static func validateOutboundURL(_ text: String, variable: String, example: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil, url.fragment == nil
        else {
            return "\(variable): not an absolute URL such as \(example)"
        }
        if scheme == "https" || (scheme == "http" && isLoopback(host)) { return nil }
        return
            "\(variable): must be https:// (plain http is allowed only to a loopback address, e.g. http://127.0.0.1:9000/hooks)"
    }

    /// `https://` anywhere, or `http://` to a loopback address only (how the emulator is reached).
    public static func validateAppleBaseURL(_ text: String) -> Result<URL, ServerSettingsError> {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.query == nil, url.fragment == nil, url.user == nil
        else {
            return .failure(
                ServerSettingsError(problems: ["APPLE_BASE_URL: not an absolute URL such as https://appleid.apple.com"])
            )
        }
        switch scheme {
        case "https":
            return .success(url)
        case "http" where isLoopback(host):
            return .success(url)
        case "http":
            return .failure(
                ServerSettingsError(problems: [
                    "APPLE_BASE_URL: must be https:// (plain http is allowed only for a loopback emulator, e.g. http://127.0.0.1:8081)"
                ])
            )
        default:
            return .failure(ServerSettingsError(problems: ["APPLE_BASE_URL: the scheme must be https"]))
        }
    }

    public static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "::1" || lowered == "[::1]" { return true }
        let octets = lowered.split(separator: ".")
        return octets.count == 4 && octets.first == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    static func parseListen(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let host = String(text[..<colon])
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            return nil
        }
        return (host, port)
    }
}

/// Every configuration problem found, one line each.
public struct ServerSettingsError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var message: String { problems.joined(separator: "\n") }
    public var description: String { message }
}
