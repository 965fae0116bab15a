extension UpgradeService {
    /// What a call brings to the effects of its transitions: the Apple credential's verified claims
    /// and the tokens of its exchanged code, once there are any.
    struct EffectInputs {
        var claims: AppleIdentityClaims?
        var tokens: AppleTokenResponse?
        /// The account's password when the conversion was claimed.
        var claimedCredential: PasswordCredentialRecord?
        /// What the device forwarded from Apple's first authorization, checked.
        var given = DeviceGivenProfile()
    }

    /// What performed effects hand back for the answer.
    struct EffectOutputs {
        /// `issueStateAndNonce`: the plain values, returned once; only their hashes are stored.
        var state: String?
        var nonce: String?
    }

    /// Performs, inside the transaction that persists a transition, the effects that must commit
    /// with it, in the order the machine returned them: `issueStateAndNonce` (the hashes go into
    /// `record`, stored by the caller) and `convertAccount` (the link, the password deleted, the
    /// account Apple-only, the refresh token sealed). `exchangeAuthorizationCode` is not one of them:
    /// it calls Apple, after its transition committed (see `submitAppleCredential`).
    func performInTransaction(
        _ effects: [UpgradeEffect],
        record: inout UpgradeSessionRecord,
        inputs: EffectInputs,
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> EffectOutputs {
        var outputs = EffectOutputs()
        for effect in effects {
            switch effect {
            case .issueStateAndNonce:
                configuration.onEffect(effect, record.id)
                let state = Self.newOneTimeValue()
                let nonce = Self.newOneTimeValue()
                record.stateHash = Self.hashOneTimeValue(state)
                record.nonceHash = Self.hashOneTimeValue(nonce)
                (outputs.state, outputs.nonce) = (state, nonce)
            case .convertAccount(let sub):
                configuration.onEffect(effect, record.id)
                try convertAccount(record, sub: sub, inputs: inputs, in: tx, now: now)
            case .exchangeAuthorizationCode:
                break
            }
        }
        return outputs
    }

    /// `convertAccount`: the account must still be a password account; its `sub` is linked (refused
    /// on `.appleLinksSub` if another account has it), its password deleted, its kind `appleOnly`,
    /// the refresh token sealed on the link, what the device forwarded and the token's
    /// `real_user_status` kept where the account's profile has none, with an audit row and the
    /// `account.converted` event.
    private func convertAccount(
        _ record: UpgradeSessionRecord,
        sub: String,
        inputs: EffectInputs,
        in tx: any StoreTransaction,
        now: Int64
    ) throws {
        guard let accountID = record.accountID, let claims = inputs.claims else {
            throw ServiceFailure(.internalError, "the upgrade has no account", cause: "convertAccount without inputs")
        }
        // The account, its password and its profile in one read.
        guard let snapshot = try tx.accountSnapshot(id: accountID), snapshot.account.credentialKind == .password
        else {
            throw ServiceFailure(.notEligible, Self.message(for: .notEligible))
        }
        let account = snapshot.account
        // A credential change that committed after the claim wins: the owner's new password is not
        // deleted by a conversion the old one authorized (docs/architecture.md §4.4).
        guard let claimed = inputs.claimedCredential, snapshot.credential == claimed else {
            throw ServiceFailure(.credentialsChanged, Self.message(for: .credentialsChanged))
        }
        let refreshCiphertext = inputs.tokens?.refreshToken.map {
            secrets.seal(Array($0.utf8), context: Self.refreshTokenContext(accountID: accountID))
        }
        try tx.insertAppleLink(
            AppleLinkRecord(
                accountID: accountID,
                sub: sub,
                teamID: configuration.appleTeamID,
                clientID: claims.audience,
                email: claims.email,
                isPrivateEmail: claims.isPrivateEmail,
                refreshTokenCiphertext: refreshCiphertext,
                status: .linked,
                linkedAt: now,
                updatedAt: now
            )
        )
        try tx.deletePasswordCredential(accountID: accountID)
        try tx.updateAccountCredentialKind(id: accountID, kind: .appleOnly, expectedVersion: account.version, now: now)
        let (profile, filled) = try inputs.given.store(
            over: snapshot.profile,
            accountID: accountID,
            realUserStatus: claims.realUserStatus.flatMap(AppleRealUserStatus.init(rawValue:)),
            in: tx,
            now: now
        )
        var detail = ["sub": sub, "clientId": claims.audience, "passwordDeleted": "true"]
        // Which fields the device's values filled, never the values (they name the person).
        if !filled.isEmpty { detail["profileFilled"] = filled.joined(separator: ",") }
        try tx.appendAudit(
            AuditEvent(
                at: now,
                accountID: accountID,
                upgradeID: record.id,
                event: "account.convertedToApple",
                fromStatus: CredentialKind.password.rawValue,
                toStatus: CredentialKind.appleOnly.rawValue,
                detail: detail
            )
        )
        try WebhookOutbox.enqueue(
            .accountConverted,
            accountID: accountID,
            data: [
                ("accountId", .string(accountID)), ("username", .string(account.username)), ("sub", .string(sub)),
                ("upgradeId", .string(record.id)),
            ] + Self.profileData(profile),
            in: tx,
            now: now
        )
    }
}
