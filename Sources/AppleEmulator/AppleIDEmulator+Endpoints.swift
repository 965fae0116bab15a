import UpgradeEngine

/// Apple's REST endpoints (docs/apple-protocol.md §2, §3), taking the already percent-decoded form parameters
/// and answering as Apple does: a value, or an `AppleEndpointError` with HTTP 400 and one of
/// Apple's error codes. Messages explain the refusal for our logs; Apple's own body carries only
/// the code (`AppleEndpointError.json`).
extension AppleIDEmulator {
    /// `POST /auth/token`: `authorization_code`, `refresh_token`, or `client_credentials` with
    /// `scope=user.migration`.
    public func token(form pairs: [(name: String, value: String)]) throws(AppleEndpointError) -> AppleTokenResponse {
        try takeFault(Self.tokenPath)
        let form = try EmulatorForm(pairs)
        let grantType = try form.required("grant_type")
        let clientID = try form.required("client_id")
        let secret = try form.required("client_secret")
        let now = clock()
        let accessToken = "a" + SecureRandom.bytes(16).hexString + ".0.\(SecureRandom.token(byteCount: 16))"
        switch grantType {
        case "authorization_code":
            let code = try form.required("code")
            let refreshToken = "r" + SecureRandom.bytes(16).hexString + ".0.\(SecureRandom.token(byteCount: 16))"
            let (claims, key) = try state.withLock { state throws(AppleEndpointError) in
                let teamID = try authenticate(state, clientID: clientID, secret: secret, now: now)
                let codeKey = EmulatorState.secretKey(code)
                guard let record = state.codes[codeKey] else {
                    throw Self.invalidGrant("the authorization code is not valid")
                }
                guard !record.used else { throw Self.invalidGrant("the authorization code was already used") }
                guard now < record.issuedAt + configuration.authorizationCodeLifetime else {
                    throw Self.invalidGrant("the authorization code expired (valid 5 minutes)")
                }
                guard record.clientID == clientID else {
                    throw Self.invalidGrant("the authorization code was issued to a different client_id")
                }
                guard record.teamID == teamID else {
                    throw Self.error(.invalidClient, "the client secret's team did not issue this code")
                }
                guard form.optional("redirect_uri") == record.redirectURI else {
                    throw Self.error(.invalidClient, "redirect_uri does not match the authorization request's")
                }
                try Self.requireActiveUser(state, userID: record.userID, clientID: clientID)
                state.codes[codeKey]?.used = true
                state.refreshTokens[EmulatorState.secretKey(refreshToken)] = EmulatorState.RefreshGrant(
                    clientID: clientID,
                    userID: record.userID,
                    teamID: teamID,
                    authTime: record.authTime
                )
                state.accessTokens[EmulatorState.secretKey(accessToken)] = EmulatorState.AccessGrant(
                    clientID: clientID,
                    teamID: teamID,
                    userID: record.userID,
                    expiresAt: now + configuration.accessTokenLifetime
                )
                let claims = identityTokenClaims(
                    &state,
                    userID: record.userID,
                    clientID: clientID,
                    teamID: teamID,
                    nonce: record.nonce,
                    authTime: record.authTime,
                    now: now,
                    codeHash: nil,
                    accessTokenHash: Self.halfHash(accessToken),
                    firstAuthorization: false
                )
                return (claims, state.signingKeys[state.signingKeys.count - 1])
            }
            return AppleTokenResponse(
                accessToken: accessToken,
                tokenType: "Bearer",
                expiresIn: Int(configuration.accessTokenLifetime),
                refreshToken: refreshToken,
                idToken: Self.sign(claims, with: key)
            )

        case "refresh_token":
            let refreshToken = try form.required("refresh_token")
            let (claims, key) = try state.withLock { state throws(AppleEndpointError) in
                let teamID = try authenticate(state, clientID: clientID, secret: secret, now: now)
                if let userID = state.refreshTokens[EmulatorState.secretKey(refreshToken)]?.userID {
                    state.refreshChecks[userID, default: []].append(now)
                }
                guard let grant = state.refreshTokens[EmulatorState.secretKey(refreshToken)], !grant.revoked else {
                    throw Self.invalidGrant("the refresh token is not valid (revoked, or never issued)")
                }
                guard grant.clientID == clientID else {
                    throw Self.invalidGrant("the refresh token was issued to a different client_id")
                }
                guard grant.teamID == teamID else {
                    throw Self.error(.invalidClient, "the client secret's team did not issue this refresh token")
                }
                try Self.requireActiveUser(state, userID: grant.userID, clientID: clientID)
                state.accessTokens[EmulatorState.secretKey(accessToken)] = EmulatorState.AccessGrant(
                    clientID: clientID,
                    teamID: teamID,
                    userID: grant.userID,
                    expiresAt: now + configuration.accessTokenLifetime
                )
                let claims = identityTokenClaims(
                    &state,
                    userID: grant.userID,
                    clientID: clientID,
                    teamID: teamID,
                    nonce: nil,
                    authTime: grant.authTime,
                    now: now,
                    codeHash: nil,
                    accessTokenHash: Self.halfHash(accessToken),
                    firstAuthorization: false
                )
                return (claims, state.signingKeys[state.signingKeys.count - 1])
            }
            return AppleTokenResponse(
                accessToken: accessToken,
                tokenType: "Bearer",
                expiresIn: Int(configuration.accessTokenLifetime),
                refreshToken: nil,
                idToken: Self.sign(claims, with: key)
            )

        case "client_credentials":
            guard let scope = form.optional("scope"), !scope.isEmpty else {
                throw Self.error(.invalidRequest, "parameter scope is missing (user.migration)")
            }
            guard scope == "user.migration" else {
                throw Self.error(.invalidScope, "scope must be user.migration")
            }
            try state.withLock { state throws(AppleEndpointError) in
                let teamID = try authenticate(state, clientID: clientID, secret: secret, now: now)
                state.accessTokens[EmulatorState.secretKey(accessToken)] = EmulatorState.AccessGrant(
                    clientID: clientID,
                    teamID: teamID,
                    userID: nil,
                    expiresAt: now + configuration.accessTokenLifetime
                )
            }
            return AppleTokenResponse(
                accessToken: accessToken,
                tokenType: "Bearer",
                expiresIn: Int(configuration.accessTokenLifetime),
                refreshToken: nil,
                idToken: nil
            )

        default:
            throw Self.error(
                .unsupportedGrantType,
                "grant_type \(IdentityTokenError.quoted(grantType)) is not supported"
            )
        }
    }

    /// `POST /auth/revoke`: succeeds when the token is revoked or already invalid. Revoking a
    /// user's refresh or access token ends their authorization of the app group (TN3194): all
    /// their tokens for it die and the next sign-in shows the sheet again.
    public func revoke(form pairs: [(name: String, value: String)]) throws(AppleEndpointError) {
        try takeFault(Self.revokePath)
        let form = try EmulatorForm(pairs)
        let clientID = try form.required("client_id")
        let secret = try form.required("client_secret")
        let token = try form.required("token")
        if let hint = form.optional("token_type_hint"), hint != "refresh_token", hint != "access_token" {
            throw Self.error(.invalidRequest, "token_type_hint must be refresh_token or access_token")
        }
        let now = clock()
        try state.withLock { state throws(AppleEndpointError) in
            _ = try authenticate(state, clientID: clientID, secret: secret, now: now)
            let key = EmulatorState.secretKey(token)
            let owner: (clientID: String, userID: String?, type: String)
            if let grant = state.refreshTokens[key] {
                owner = (grant.clientID, grant.userID, "refresh_token")
            } else if let grant = state.accessTokens[key] {
                owner = (grant.clientID, grant.userID, "access_token")
            } else {
                return  // unknown: already invalid
            }
            guard owner.clientID == clientID else {
                throw Self.error(.invalidRequest, "the token was issued to a different client_id")
            }
            state.revocations[
                key,
                default: EmulatorState.Revocation(
                    clientID: owner.clientID,
                    userID: owner.userID,
                    tokenType: owner.type,
                    count: 0
                )
            ].count += 1
            state.refreshTokens[key]?.revoked = true
            state.accessTokens[key]?.revoked = true
            if let userID = owner.userID {
                let group = state.group(of: clientID)
                state.users[userID]?.consents[group]?.revoked = true
                Self.revokeGrants(&state, userID: userID, group: group)
            }
        }
    }

    /// `POST /auth/usermigrationinfo` with `Authorization: Bearer <access token>`.
    ///
    /// Sender team: `sub` + `target` → the user's `transfer_sub` for the target team (before the
    /// transfer, or within 60 days after it). Recipient team: `transfer_sub` → the user's new
    /// `sub` (and relay email), once the transfer is complete and for 60 days. A user who revoked
    /// consent or deleted their account cannot be migrated (`invalid_request`, docs/apple-protocol.md §3.6);
    /// expired, revoked or already used per-user access tokens answer `invalid_grant` (DTS).
    public func userMigrationInfo(
        form pairs: [(name: String, value: String)],
        authorization: String?
    ) throws(AppleEndpointError) -> AppleMigrationInfo {
        let form = try EmulatorForm(pairs)
        let clientID = try form.required("client_id")
        let secret = try form.required("client_secret")
        guard let authorization, authorization.hasPrefix("Bearer "), authorization.count > 7 else {
            throw Self.error(.invalidRequest, "the Authorization: Bearer header is missing")
        }
        let accessToken = String(authorization.dropFirst(7))
        let sub = form.optional("sub")
        let target = form.optional("target")
        let transferSub = form.optional("transfer_sub")
        let now = clock()
        return try state.withLock { state throws(AppleEndpointError) in
            let teamID = try authenticate(state, clientID: clientID, secret: secret, now: now)
            let tokenKey = EmulatorState.secretKey(accessToken)
            guard let grant = state.accessTokens[tokenKey], !grant.revoked, now < grant.expiresAt else {
                throw Self.invalidGrant("the access token is not valid (expired, revoked or never issued)")
            }
            guard !grant.consumed else { throw Self.invalidGrant("the per-user access token was already used") }
            guard grant.clientID == clientID, grant.teamID == teamID else {
                throw Self.error(.invalidRequest, "the access token does not belong to this client_id and team")
            }
            let group = state.group(of: clientID)

            switch (sub, target, transferSub) {
            case (let sub?, let target?, nil):
                guard ClientSecretSigner.isAppleIdentifier(target) else {
                    throw Self.error(.invalidRequest, "target must be a 10-character team id")
                }
                guard target != teamID else { throw Self.error(.invalidRequest, "target is the sender's own team") }
                guard let (userID, subTeam) = state.subjects[sub], subTeam == teamID else {
                    throw Self.error(.invalidRequest, "sub is not a user of this team")
                }
                if let owner = grant.userID, owner != userID {
                    throw Self.error(.invalidRequest, "the per-user access token belongs to another user")
                }
                try Self.requireMigratable(state, userID: userID, group: group)
                if grant.userID != nil { state.accessTokens[tokenKey]?.consumed = true }
                return .transferSub(Self.transferID(&state, userID: userID, from: teamID, to: target))

            case (nil, nil, let transferSub?):
                guard let key = state.transfers[transferSub], key.toTeam == teamID else {
                    throw Self.error(.invalidRequest, "transfer_sub was not issued for this team")
                }
                guard let app = state.apps[clientID], let transfer = app.transfer, app.teamID == teamID,
                    transfer.toTeam == teamID, transfer.fromTeam == key.fromTeam
                else {
                    throw Self.error(
                        .invalidRequest,
                        "\(clientID) has not been transferred to this team from the sender"
                    )
                }
                guard now < transfer.completedAt + configuration.transferWindow else {
                    throw Self.error(.invalidRequest, "the 60-day migration window for \(clientID) has closed")
                }
                if let owner = grant.userID, owner != key.userID {
                    throw Self.error(.invalidRequest, "the per-user access token belongs to another user")
                }
                try Self.requireMigratable(state, userID: key.userID, group: group)
                if grant.userID != nil { state.accessTokens[tokenKey]?.consumed = true }
                let newSub = Self.subject(&state, userID: key.userID, teamID: teamID)
                let email = Self.email(&state, userID: key.userID, clientID: clientID, teamID: teamID)
                let isPrivate = email?.isPrivate == true
                return .migratedUser(
                    AppleMigratedUser(
                        sub: newSub,
                        email: isPrivate ? email?.address : nil,
                        isPrivateEmail: isPrivate ? true : nil
                    )
                )

            default:
                throw Self.error(
                    .invalidRequest,
                    "send either sub and target (sender team) or transfer_sub (recipient team)"
                )
            }
        }
    }

    // MARK: Client authentication

    /// Checks `client_secret` as docs/apple-protocol.md §2.1 and TN3107 describe and returns the team it
    /// authenticates. Every failure is `invalid_client`.
    func authenticate(
        _ state: EmulatorState,
        clientID: String,
        secret: String,
        now: Int64
    ) throws(AppleEndpointError)
        -> String
    {
        func refuse(_ message: String) -> AppleEndpointError {
            Self.error(.invalidClient, "client_secret: \(message)")
        }
        let claims: VerifiedClientSecret
        if let known = verifiedSecrets.withLock({ $0[secret] }),
            state.teams[known.teamID]?.keys[known.keyID] === known.key
        {
            claims = known  // the same text, verified before with the key still registered under its kid
        } else {
            claims = try verifySignature(state, secret: secret, refuse: refuse)
            verifiedSecrets.withLock { known in
                if known.count >= Self.verifiedSecretsLimit { known.removeAll() }
                known[secret] = claims
            }
        }
        let teamID = claims.teamID
        guard claims.subject == clientID else { throw refuse("sub is not identical to client_id") }
        guard claims.audience == ClientSecretSigner.audience else {
            throw refuse("aud must be \(ClientSecretSigner.audience)")
        }
        guard let issuedAt = claims.issuedAt, let expiresAt = claims.expiresAt else {
            throw refuse("iat and exp must be integers")
        }
        guard issuedAt <= now + configuration.clientSecretLeeway else { throw refuse("iat is in the future") }
        guard now < expiresAt else { throw refuse("the client secret expired") }
        guard expiresAt > issuedAt, expiresAt - issuedAt <= ClientSecretSigner.maximumLifetime else {
            throw refuse("exp must be after iat and at most 15777000 seconds later")
        }
        guard let app = state.apps[clientID] else { throw Self.error(.invalidClient, "client_id is not registered") }
        let previousOwnerInWindow =
            app.transfer.map { $0.fromTeam == teamID && now < $0.completedAt + configuration.transferWindow } ?? false
        guard app.teamID == teamID || previousOwnerInWindow else {
            throw Self.error(.invalidClient, "client_id does not belong to team \(teamID)")
        }
        return teamID
    }

    /// Parses `secret` and checks its ES256 signature with the key its `iss` and `kid` name; returns
    /// the claims the caller judges.
    private func verifySignature(
        _ state: EmulatorState,
        secret: String,
        refuse: (String) -> AppleEndpointError
    ) throws(AppleEndpointError) -> VerifiedClientSecret {
        let jws: JWSCompact
        let header: JWSHeader
        let claims: JSONValue
        do {
            jws = try JWSCompact(parsing: secret, maximumLength: 4096)
            header = try JWSHeader(json: jws.header)
            claims = try JSONValue.parse(jws.payload)
        } catch {
            throw refuse("not a compact JWS with JSON header and claims")
        }
        guard header.algorithm == "ES256" else { throw refuse("alg must be ES256") }
        guard let keyID = header.keyID else { throw refuse("the header has no kid") }
        guard let teamID = claims["iss"]?.stringValue else { throw refuse("iss (team id) is missing") }
        guard let team = state.teams[teamID] else { throw refuse("iss is not a known team id") }
        guard let key = team.keys[keyID] else { throw refuse("kid is not a key registered by team \(teamID)") }
        guard jws.signature.count == 64 else {
            throw refuse("unsupported signature byte format (expected 64-byte R||S, not ASN.1 DER)")
        }
        guard key.verifyJOSE(signature: jws.signature, message: jws.signingInput) else {
            throw refuse("the signature does not verify")
        }
        return VerifiedClientSecret(
            key: key,
            keyID: keyID,
            teamID: teamID,
            subject: claims["sub"]?.stringValue,
            audience: claims["aud"]?.stringValue,
            issuedAt: claims["iat"]?.int64Value,
            expiresAt: claims["exp"]?.int64Value
        )
    }

    static func requireActiveUser(_ state: EmulatorState, userID: String, clientID: String) throws(AppleEndpointError) {
        guard let user = state.users[userID], !user.deleted else {
            throw invalidGrant("the user deleted their Apple Account")
        }
        guard let consent = user.consents[state.group(of: clientID)], !consent.revoked else {
            throw invalidGrant("the user revoked the app's authorization")
        }
    }

    static func requireMigratable(_ state: EmulatorState, userID: String, group: String) throws(AppleEndpointError) {
        guard let user = state.users[userID], !user.deleted else {
            throw error(.invalidRequest, "the user deleted their Apple Account")
        }
        guard let consent = user.consents[group], !consent.revoked else {
            throw error(.invalidRequest, "the user has not authorized this app, or revoked it; they cannot be migrated")
        }
    }

    static func error(_ code: AppleEndpointError.Code, _ message: String) -> AppleEndpointError {
        AppleEndpointError(code: code, httpStatus: 400, message: message)
    }

    static func invalidGrant(_ message: String) -> AppleEndpointError {
        error(.invalidGrant, message)
    }
}
