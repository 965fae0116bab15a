import Foundation

/// Drives the upgrade state machine: loads the record, checks credentials, applies the event,
/// performs the effects, and persists the new state with its audit entry in one transaction
/// guarded by the record's version. Slow work (password hashing, Apple calls) happens outside
/// transactions; a request that finds the record changed meanwhile answers from what is stored.
public final class UpgradeService: Sendable {
    let store: any UpgradeStore
    let passwords: PasswordVerifier
    let secrets: SecretBox
    let identityTokens: any IdentityTokenVerifying
    let apple: any AppleTokenExchanging
    let configuration: UpgradeServiceConfiguration
    /// Raises the failure floor after refusals that overran it (`heldToFloor`).
    let failureFloors = FailureFloorTracker()
    /// One password check per username at a time, until its answer is due (`oneCheckAtATime`).
    let credentialChecks = CredentialCheckGate()
    /// Failed credential checks per client, counted in the credential check's own transactions.
    public let clientThrottle: ClientThrottle?
    /// `configuration.passwordRules` until a reload replaces them (`replacePasswordRules`); a
    /// password change reads them once.
    let passwordRules: Reloadable<PasswordRules>

    public init(
        store: any UpgradeStore,
        passwords: PasswordVerifier = PasswordVerifier(),
        secrets: SecretBox,
        identityTokens: any IdentityTokenVerifying,
        apple: any AppleTokenExchanging,
        configuration: UpgradeServiceConfiguration
    ) {
        self.store = store
        self.passwords = passwords
        self.secrets = secrets
        self.identityTokens = identityTokens
        self.apple = apple
        self.configuration = configuration
        self.clientThrottle = configuration.clientThrottle.map { ClientThrottle(policy: $0, store: store) }
        self.passwordRules = Reloadable(configuration.passwordRules)
    }

    /// What a changed password must meet from the next password change on (a reload).
    public func replacePasswordRules(_ rules: PasswordRules) { passwordRules.replace(with: rules) }

    /// What a changed password must meet now.
    public var currentPasswordRules: PasswordRules { passwordRules.current }

    // MARK: Input limits (checked before any work; a violation changes nothing)

    static let maxUsernameBytes = 256
    static let maxPasswordBytes = 1024
    static let maxTicketBytes = 256
    static let maxServiceIdentifierBytes = 255
    static let maxIdentityTokenBytes = 16 * 1024
    static let maxAuthorizationCodeBytes = 2048
    static let maxStateBytes = 512

    static func require(_ value: String, _ field: String, maxBytes: Int) throws(ServiceFailure) {
        guard !value.isEmpty else { throw ServiceFailure(.validation, "\(field) is required") }
        guard value.utf8.count <= maxBytes else {
            throw ServiceFailure(.validation, "\(field) is longer than \(maxBytes) bytes")
        }
    }

    /// Upgrade ids carry 128 random bits, so they cannot be guessed or enumerated.
    static func newUpgradeID() -> String { "upg_" + SecureRandom.token(byteCount: 16) }

    /// `state` and `nonce` are 256-bit random strings; only their SHA-256 is stored.
    static func newOneTimeValue() -> String { SecureRandom.token(byteCount: 32) }

    static func hashOneTimeValue(_ value: String) -> String { Digest.sha256(value).hexString }

    // MARK: Machine persistence

    /// The `machine` column: `UpgradeState.Persisted` as a JSON object with sorted keys, written with
    /// the engine's own JSON serializer (a hot path: every transition writes one).
    public static func encode(_ machine: UpgradeStateMachine) -> String {
        let state = machine.state.persisted
        return JSONValue.object([
            "cancelCode": state.cancelCode.map { .integer(Int64($0)) },
            "deadline": state.deadline.map { .integer($0) },
            "failedAttempts": state.failedAttempts.map { .integer(Int64($0)) },
            "failureReason": state.failureReason.map { .string($0) },
            "sessionDeadline": state.sessionDeadline.map { .integer($0) },
            "status": .string(state.status),
            "sub": state.sub.map { .string($0) },
        ]).serializedString
    }

    func restore(_ record: UpgradeSessionRecord) throws(ServiceFailure) -> UpgradeStateMachine {
        try Self.restore(record, policy: configuration.policy)
    }

    /// The machine stored in `record`, under `policy`; an unreadable column is an internal failure.
    static func restore(
        _ record: UpgradeSessionRecord,
        policy: UpgradePolicy
    ) throws(ServiceFailure)
        -> UpgradeStateMachine
    {
        let unreadable = ServiceFailure(
            .internalError,
            "the stored upgrade could not be read",
            cause: "upgrade \(record.id): the machine column is not a state this version knows"
        )
        guard let json = try? JSONValue.parse(Array(record.machine.utf8)), json.members != nil,
            let status = json["status"]?.stringValue
        else { throw unreadable }
        let persisted = UpgradeState.Persisted(
            status: status,
            deadline: json["deadline"]?.int64Value,
            sessionDeadline: json["sessionDeadline"]?.int64Value,
            failedAttempts: json["failedAttempts"]?.int64Value.map { Int($0) },
            sub: json["sub"]?.stringValue,
            failureReason: json["failureReason"]?.stringValue,
            cancelCode: json["cancelCode"]?.int64Value.map { Int($0) }
        )
        do {
            return UpgradeStateMachine(state: try UpgradeState(persisted: persisted), policy: policy)
        } catch {
            throw unreadable
        }
    }

    /// Loads an upgrade or answers `not-found`.
    func load(_ id: String) throws(ServiceFailure) -> UpgradeSessionRecord {
        guard !id.isEmpty, id.utf8.count <= 64 else { throw ServiceFailure(.notFound, "no upgrade with this id") }
        let record: UpgradeSessionRecord?
        do {
            record = try store.read { try $0.upgradeSession(id: id) }
        } catch {
            throw Self.storageFailure(error)
        }
        guard let record else { throw ServiceFailure(.notFound, "no upgrade with this id") }
        return record
    }

    /// The failure a client sees when storage failed: generic for the client, with the storage error
    /// kept as `cause` for the request's log line. An unreachable database is told apart, since
    /// retrying later is then the client's whole remedy.
    static func storageFailure(_ error: any Error) -> ServiceFailure {
        if let failure = error as? ServiceFailure { return failure }
        if let storage = error as? StorageError, storage.code == .unavailable {
            return ServiceFailure(
                .databaseUnavailable,
                "the database cannot be reached; retry shortly",
                cause: storage.description
            )
        }
        return ServiceFailure(
            .internalError,
            "the upgrade could not be stored; nothing changed, retry later",
            cause: Self.cause(of: error)
        )
    }

    /// What to log of an unexpected error: a storage error as it describes itself (its code and a
    /// message naming tables and constraints, never bound values), anything else by its type only.
    static func cause(of error: any Error) -> String {
        if let storage = error as? StorageError { return storage.description }
        return "\(type(of: error))"
    }

    /// The audit row for one applied transition (no secrets: statuses, event names, reason codes).
    static func audit(
        _ transition: UpgradeTransition,
        record: UpgradeSessionRecord,
        now: Int64,
        detail: [String: String] = [:]
    ) -> AuditEvent {
        var detail = detail
        if let problem = transition.problem { detail["problem"] = problem.rawValue }
        // Every row of the flow says how it was entered, so the report counts outcomes by entry
        // from the trail alone (docs/architecture.md §7.7).
        if let entry = record.entry { detail["entry"] = entry }
        return AuditEvent(
            at: now,
            accountID: record.accountID,
            upgradeID: record.id,
            event: "upgrade.\(transition.event)",
            fromStatus: transition.from.rawValue,
            toStatus: transition.to.rawValue,
            detail: detail
        )
    }

    /// Copies the machine's new state into the record for an update.
    func updated(_ record: UpgradeSessionRecord, _ machine: UpgradeStateMachine, now: Int64) -> UpgradeSessionRecord {
        Self.updated(record, machine, now: now)
    }

    static func updated(
        _ record: UpgradeSessionRecord,
        _ machine: UpgradeStateMachine,
        now: Int64
    )
        -> UpgradeSessionRecord
    {
        var next = record
        next.status = machine.status.rawValue
        next.machine = Self.encode(machine)
        next.expiresAt = machine.deadline ?? record.expiresAt
        next.updatedAt = now
        return next
    }

    /// The failure that answers a machine in a failed or otherwise non-success state.
    func failure(for machine: UpgradeStateMachine, id: String, problem: UpgradeFailureReason?) -> ServiceFailure {
        let reason = problem ?? machine.state.problem ?? .notEligible
        var failure = ServiceFailure(
            ServiceFailure.Kind(reason),
            Self.message(for: reason),
            result: machine.result ?? .failure,
            upgradeID: id,
            status: machine.status
        )
        if reason == .invalidCode {
            failure.result = .twoFactorAuthRequired
            failure.attemptsRemaining = machine.attemptsRemaining
        }
        return failure
    }

    static func message(for reason: UpgradeFailureReason) -> String {
        switch reason {
        case .invalidCredentials: "the username or password is not correct"
        case .invalidTicket: "the upgrade ticket is not valid for this username: wrong, expired or already used"
        case .locked: "too many failed attempts for this username; try again later"
        case .notEligible: "this account cannot be upgraded to Sign in with Apple"
        case .invalidCode: "the code is not correct or was already used"
        case .tooManyAttempts: "too many wrong codes; start a new upgrade"
        case .stateMismatch: "the state does not match the one issued for this upgrade"
        case .nonceMismatch: "the identity token's nonce does not match the one issued for this upgrade"
        case .invalidIdentityToken: "the identity token was rejected"
        case .subConflict: "this Apple account is already linked to another account"
        case .appleExchangeFailed: "Apple did not accept the authorization code"
        case .appleUnavailable: "Apple could not be reached to exchange the authorization code; nothing was linked"
        case .invalidAuthorizationCode:
            "the authorization code does not belong to the identity token; nothing was linked, start a new upgrade"
        case .conversionInterrupted:
            "the server was interrupted while converting this upgrade; the account is unchanged, start a new upgrade"
        case .upgradeExpired: "the upgrade expired; start a new one"
        case .credentialsChanged:
            "the account's password or second factor changed after this upgrade began; nothing was linked, start a new upgrade"
        }
    }

    /// Refusal of an event by the machine, as the client sees it.
    func failure(for error: TransitionError, machine: UpgradeStateMachine, id: String) -> ServiceFailure {
        switch machine.status {
        case .expired:
            return ServiceFailure(.upgradeExpired, Self.message(for: .upgradeExpired), upgradeID: id, status: .expired)
        case .failed:
            var failure = self.failure(for: machine, id: id, problem: nil)
            failure.message = Self.alreadyEnded("failed", failure.message)
            return failure
        default:
            // The refused call failed, whatever the upgrade's own state says (a `success` here would
            // tell the extension its call worked).
            if error.code == .conflict {
                return ServiceFailure(.subConflict, error.message, upgradeID: id, status: machine.status)
            }
            return ServiceFailure(
                .notAllowedInState,
                "this call is not allowed while the upgrade is '\(machine.status.rawValue)'",
                upgradeID: id,
                status: machine.status
            )
        }
    }

    /// What a call to an upgrade that already ended is told: how it ended, and to start a new one.
    static func alreadyEnded(_ status: String, _ why: String, what: String = "") -> String {
        let advice = why.contains("start a new") ? "" : "; start a new upgrade"
        return "this upgrade already ended as '\(status)' (\(why))\(what)\(advice)"
    }

    /// An answer for a machine whose current state is a success or a step-up request.
    func answer(_ machine: UpgradeStateMachine, id: String, accountID: String? = nil) -> UpgradeAnswer {
        UpgradeAnswer(
            id: id,
            status: machine.status,
            result: machine.result ?? .success,
            expiresAt: machine.deadline,
            accountID: machine.status == .completed ? accountID : nil,
            attemptsRemaining: machine.attemptsRemaining
        )
    }
}
