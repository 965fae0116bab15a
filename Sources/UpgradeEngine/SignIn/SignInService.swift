/// Sign in with Apple outside an upgrade (`POST /v1/apple/sign-in`) and the nonces it requires.
///
/// A sign-in: the identity token is verified with Apple's keys and its nonce must be one this server
/// issued, unexpired (`SignInNonces`); that nonce is then spent, so a captured token signs in once,
/// even if the sign-in fails after this point. The account is found by `sub`, or by `transfer_sub`
/// during a transfer window (completing that account's migration, `TransferService.signIn`). An
/// authorization code given with the token is exchanged only as the token's
/// (`AuthorizationCodeExchange`), and its refresh token stored sealed on the account's link.
public final class SignInService: Sendable {
    public struct Result: Sendable, Equatable {
        public var accountID: String
        public var sub: String
        /// Whether this sign-in completed a team transfer (matched by `transfer_sub`).
        public var migrated: Bool
    }

    static let maxIdentityTokenBytes = 16 * 1024
    static let maxAuthorizationCodeBytes = 2048

    let store: any UpgradeStore
    let identityTokens: any IdentityTokenVerifying
    let apple: any AppleTokenExchanging
    let nonces: SignInNonces
    let transfers: TransferService
    let upgrades: UpgradeService

    public init(
        store: any UpgradeStore,
        identityTokens: any IdentityTokenVerifying,
        apple: any AppleTokenExchanging,
        nonces: SignInNonces,
        transfers: TransferService,
        upgrades: UpgradeService
    ) {
        self.store = store
        self.identityTokens = identityTokens
        self.apple = apple
        self.nonces = nonces
        self.transfers = transfers
        self.upgrades = upgrades
    }

    /// A nonce for the client to pass to Apple's request unchanged; nothing is stored.
    public func issueNonce(now: Int64) -> (nonce: String, expiresAt: Int64) {
        nonces.issue(now: now)
    }

    /// `email` and `fullName` are what Apple gave the device on a first authorization, forwarded
    /// unverified: checked first (a bad one is refused before anything is spent), then kept as the
    /// account's contact email and display name where it has none (`DeviceGivenProfile`), with the
    /// token's `real_user_status`.
    public func signIn(
        identityToken: String,
        authorizationCode: String?,
        email: String? = nil,
        fullName: PersonName? = nil,
        now: Int64
    ) async throws(SignInFailure) -> Result {
        guard !identityToken.isEmpty, identityToken.utf8.count <= Self.maxIdentityTokenBytes else {
            throw SignInFailure(.validation, "field 'identityToken' must be 1 to \(Self.maxIdentityTokenBytes) bytes")
        }
        if let code = authorizationCode, code.isEmpty || code.utf8.count > Self.maxAuthorizationCodeBytes {
            throw SignInFailure(
                .validation,
                "field 'authorizationCode' must be 1 to \(Self.maxAuthorizationCodeBytes) bytes"
            )
        }
        let given: DeviceGivenProfile
        do {
            given = try DeviceGivenProfile(email: email, fullName: fullName)
        } catch {
            throw SignInFailure(.validation, error.description)
        }
        let claims = try await verify(identityToken, now: now)
        try spendNonce(of: claims, now: now)
        // A code that names another token is refused before anything is looked up or spent.
        if let code = authorizationCode, !AuthorizationCodeExchange.codeMatchesToken(code, claims) {
            throw SignInFailure(
                .invalidAuthorizationCode,
                "the authorization code does not belong to the identity token (c_hash differs); it was not used"
            )
        }
        let account: TransferSignInResult
        do {
            account = try transfers.signIn(claims: claims, now: now)
        } catch {
            throw SignInFailure(error)
        }
        try keep(given, claims: claims, accountID: account.accountID, now: now)
        if let code = authorizationCode {
            let tokens: AppleTokenResponse
            do {
                tokens = try await AuthorizationCodeExchange(apple: apple, identityTokens: identityTokens)
                    .exchange(code, for: claims, now: now)
            } catch {
                throw SignInFailure(
                    error.code == .appleUnavailable ? .appleUnavailable : .invalidAuthorizationCode,
                    error.message,
                    cause: "apple \(error.appleCode?.rawValue ?? "-"): \(error)"
                )
            }
            if let refresh = tokens.refreshToken {
                do {
                    try upgrades.storeRefreshToken(refresh, accountID: account.accountID, now: now)
                } catch {
                    let kind: SignInFailure.Kind =
                        switch error.kind {
                        case .notFound: .notFound
                        case .databaseUnavailable: .storeUnavailable
                        default: .internalError
                        }
                    throw SignInFailure(kind, error.message, cause: error.cause)
                }
            }
        }
        return Result(accountID: account.accountID, sub: claims.subject, migrated: account.migrated)
    }

    /// Stores what the device forwarded, and the token's `real_user_status`, where the account's
    /// profile has none, in one write transaction (`fillProfile`).
    private func keep(
        _ given: DeviceGivenProfile,
        claims: AppleIdentityClaims,
        accountID: String,
        now: Int64
    ) throws(SignInFailure) {
        let status = claims.realUserStatus.flatMap(AppleRealUserStatus.init(rawValue:))
        guard !given.isEmpty || status != nil else { return }
        do {
            try store.write { tx in
                try Self.fillProfile(
                    given,
                    realUserStatus: status,
                    sub: claims.subject,
                    accountID: accountID,
                    in: tx,
                    now: now
                )
            }
        } catch {
            let unavailable = (error as? StorageError)?.code == .unavailable
            throw SignInFailure(
                unavailable ? .storeUnavailable : .internalError,
                unavailable
                    ? "the database cannot be reached; retry shortly"
                    : "the sign-in could not be recorded; retry later",
                cause: UpgradeService.cause(of: error)
            )
        }
    }

    /// Inside a write transaction: fills the profile of `accountID` (`DeviceGivenProfile.store`) and,
    /// when a field was filled, writes an audit row naming the fields (not their values) and the
    /// `account.profile-filled` event with the profile as it now stands, so a backend told of the
    /// conversion learns what the server learned since. Only while the account's link is still
    /// `sub`: an account deleted or relinked since it was found gets nothing.
    static func fillProfile(
        _ given: DeviceGivenProfile,
        realUserStatus: AppleRealUserStatus?,
        sub: String,
        accountID: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws(StorageError) {
        guard try tx.appleLink(accountID: accountID)?.sub == sub else { return }
        let (profile, filled) = try given.store(accountID: accountID, realUserStatus: realUserStatus, in: tx, now: now)
        guard !filled.isEmpty else { return }
        try tx.appendAudit(
            AuditEvent(
                at: now,
                accountID: accountID,
                upgradeID: nil,
                event: "account.profileFilled",
                detail: ["fields": filled.joined(separator: ","), "source": "sign-in"]
            )
        )
        try WebhookOutbox.enqueue(
            .accountProfileFilled,
            accountID: accountID,
            data: [
                ("accountId", .string(accountID)), ("sub", .string(sub)),
                ("fields", .array(filled.map(JSONValue.string))),
            ] + UpgradeService.profileData(profile),
            in: tx,
            now: now
        )
    }

    /// The token's signature and claims, and its nonce as one of ours (not yet spent).
    private func verify(_ token: String, now: Int64) async throws(SignInFailure) -> AppleIdentityClaims {
        do {
            return try await identityTokens.verifyIdentityToken(token, nonce: .issuedForSignIn(nonces), now: now)
        } catch  where error.code == .nonceMissing {
            throw SignInFailure(
                .nonceMismatch,
                "the identity token carries no nonce; get one from POST /v1/apple/sign-in/nonce and pass it to Apple's request unchanged"
            )
        } catch  where error.code == .nonceMismatch {
            throw SignInFailure(
                .nonceMismatch,
                "the identity token's nonce was not issued by this server or has expired; get a new one from POST /v1/apple/sign-in/nonce"
            )
        } catch  where error.code == .keysUnavailable {
            throw SignInFailure(
                .appleUnavailable,
                "Apple's signing keys could not be fetched; retry shortly",
                cause: error.message
            )
        } catch {
            throw SignInFailure(.invalidIdentityToken, "the identity token was rejected (\(error.code))")
        }
    }

    /// A nonce signs in once: a replayed token stops here, before any account is looked up.
    private func spendNonce(of claims: AppleIdentityClaims, now: Int64) throws(SignInFailure) {
        guard let nonce = claims.checkedNonce else {
            throw SignInFailure(.internalError, "the sign-in nonce could not be recorded", cause: "no checked nonce")
        }
        let firstUse: Bool
        do {
            firstUse = try store.write { tx in
                try tx.useSignInNonce(
                    hash: SignInNonces.usedKey(nonce),
                    expiresAt: nonces.usedRecordExpiry(acceptedAt: now),
                    now: now
                )
            }
        } catch {
            let unavailable = (error as? StorageError)?.code == .unavailable
            throw SignInFailure(
                unavailable ? .storeUnavailable : .internalError,
                unavailable
                    ? "the database cannot be reached; retry shortly"
                    : "the sign-in could not be recorded; retry later",
                cause: UpgradeService.cause(of: error)
            )
        }
        guard firstUse else {
            throw SignInFailure(
                .nonceMismatch,
                "this identity token's nonce has already been used to sign in; get a new one from POST /v1/apple/sign-in/nonce"
            )
        }
    }
}
