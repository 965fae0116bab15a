import UpgradeEngine

/// How the REST API answers the engine's failures, the one place where they become problems: a
/// table per failure type from each kind to its HTTP status and problem slug, and from each way an
/// upgrade can end to the slug clients see. The engine knows neither; its stored failure reasons
/// have codes of their own, so renaming a slug here never changes stored data.
enum UpgradeProblems {
    /// The problem that answers `error`, or nil for an error no table knows (a bare 500, logged).
    static func problem(for error: any Error) -> APIProblem? {
        switch error {
        case let problem as APIProblem: problem
        case let failure as ServiceFailure: APIProblem(failure)
        case let failure as SignInFailure: APIProblem(failure)
        case let failure as TransferFailure: APIProblem(failure)
        // The services turn storage errors into their failures: only `/readyz`'s ping lets one through.
        case is StorageError: APIProblem(status: 503, slug: "not-ready", detail: "the database does not answer")
        default: nil
        }
    }

    /// The HTTP status and problem slug of a failure kind.
    static func problem(for kind: ServiceFailure.Kind) -> (status: Int, slug: String) {
        table[kind] ?? (500, "internal")
    }

    static let table: [ServiceFailure.Kind: (status: Int, slug: String)] = [
        .invalidCredentials: (401, "invalid-credentials"),
        .invalidTicket: (401, "invalid-ticket"),
        .accountNotFound: (404, "account-not-found"),
        .locked: (429, "locked"),
        .notEligible: (409, "not-eligible"),
        .invalidCode: (401, "invalid-code"),
        .tooManyAttempts: (401, "too-many-attempts"),
        .stateMismatch: (400, "state-mismatch"),
        .nonceMismatch: (400, "nonce-mismatch"),
        .invalidIdentityToken: (400, "invalid-identity-token"),
        .subConflict: (409, "sub-conflict"),
        .upgradeExpired: (410, "upgrade-expired"),
        .notAllowedInState: (409, "not-allowed-in-state"),
        .notFound: (404, "not-found"),
        .inProgress: (409, "upgrade-in-progress"),
        .conversionInterrupted: (409, "conversion-interrupted"),
        .invalidAuthorizationCode: (400, "invalid-authorization-code"),
        .appleUnavailable: (502, "apple-unavailable"),
        .validation: (422, "validation"),
        .rateLimited: (429, "rate-limited"),
        .databaseUnavailable: (503, "database-unavailable"),
        .internalError: (500, "internal"),
        .passwordPolicy: (422, "password-policy"),
        .credentialsChanged: (409, "credentials-changed"),
        .legacyUnavailable: (503, "legacy-unavailable"),
    ]

    /// The HTTP status and problem slug of a sign-in or notification failure kind.
    static func problem(for kind: SignInFailure.Kind) -> (status: Int, slug: String) {
        signInTable[kind] ?? (500, "internal")
    }

    static let signInTable: [SignInFailure.Kind: (status: Int, slug: String)] = [
        .validation: (422, "validation"),
        .nonceMismatch: (400, "nonce-mismatch"),
        .invalidIdentityToken: (400, "invalid-identity-token"),
        .invalidAuthorizationCode: (400, "invalid-authorization-code"),
        .appleUnavailable: (502, "apple-unavailable"),
        .notFound: (404, "not-found"),
        .revoked: (403, "revoked"),
        .subConflict: (409, "sub-conflict"),
        .invalidNotification: (400, "invalid-notification"),
        .storeUnavailable: (503, "database-unavailable"),
        .internalError: (500, "internal"),
    ]

    /// The HTTP status and problem slug of a transfer-service failure (`GET /v1/apple/credential-state`).
    static let transferTable: [TransferFailure.Code: (status: Int, slug: String)] = [
        .validation: (422, "validation"),
        .notFound: (404, "not-found"),
        .revoked: (403, "revoked"),
        .conflict: (409, "sub-conflict"),
        .unavailable: (503, "database-unavailable"),
        .internalError: (500, "internal"),
    ]

    /// The slug `GET /v1/upgrades/{id}` shows for how an upgrade ended, or for a transition's problem.
    static func slug(for reason: UpgradeFailureReason) -> String {
        switch reason {
        case .invalidCredentials: "invalid-credentials"
        case .invalidTicket: "invalid-ticket"
        case .locked: "locked"
        case .notEligible: "not-eligible"
        case .invalidCode: "invalid-code"
        case .tooManyAttempts: "too-many-attempts"
        case .stateMismatch: "state-mismatch"
        case .nonceMismatch: "nonce-mismatch"
        case .invalidIdentityToken: "invalid-identity-token"
        case .subConflict: "sub-conflict"
        // The stored code predates the slug its call is answered with.
        case .appleExchangeFailed: "invalid-authorization-code"
        case .appleUnavailable: "apple-unavailable"
        case .invalidAuthorizationCode: "invalid-authorization-code"
        case .conversionInterrupted: "conversion-interrupted"
        case .upgradeExpired: "upgrade-expired"
        case .credentialsChanged: "credentials-changed"
        }
    }
}
