extension TransferService {
    /// `POST /v1/apple/sign-in` with verified identity-token claims: the account linked to the
    /// token's `sub`; failing that, during the migration window, the account whose stored
    /// `transfer_sub` the token carries (docs/apple-protocol.md §3.5) — which this sign-in migrates, re-keying its
    /// link in the same transaction a `complete` batch would use. Repeating the sign-in finds the
    /// account by its new `sub` and changes nothing.
    ///
    /// The window is Apple's to enforce: tokens carry `transfer_sub` only while it is open, and the
    /// token is signed by Apple, so its `sub`–`transfer_sub` pair is trusted as it is.
    public func signIn(claims: AppleIdentityClaims, now: Int64) throws(TransferFailure) -> TransferSignInResult {
        guard !claims.subject.isEmpty else { throw TransferFailure(.validation, "the identity token has no sub") }
        let link: AppleLinkRecord?
        do {
            link = try store.read { try $0.appleLink(sub: claims.subject) }
        } catch {
            throw Self.storageFailure(error)
        }
        if let link {
            switch link.status {
            case .revoked, .deleted: throw Self.ended(link.status)
            case .linked, .transferred: return TransferSignInResult(accountID: link.accountID, migrated: false)
            }
        }

        guard let transferSub = claims.transferSub, !transferSub.isEmpty else { throw Self.unknownAppleID }
        let record: TransferRecord?
        do {
            record = try store.read { try $0.transferRecord(transferSub: transferSub) }
        } catch {
            throw Self.storageFailure(error)
        }
        guard let record else { throw Self.unknownAppleID }
        // The token's `sub` is the team the identifier was made for; a deployment configured as
        // another team would record it as its own. `complete` stops on the same mismatch.
        guard record.targetTeamID.isEmpty || record.targetTeamID == configuration.teamID else {
            throw TransferFailure(
                .internalError,
                "this server cannot complete the account's team transfer; retry later",
                cause:
                    "transfer identifiers were prepared for team \(record.targetTeamID), but this deployment is configured as team \(configuration.teamID)"
            )
        }

        let event = TransferEvent.signedInWithTransferSub(
            transferSub: transferSub,
            sub: claims.subject,
            email: claims.email
        )
        // `is_private_email` is absent for a real address (docs/apple-protocol.md §1.2).
        let commit = Commit(
            event: event,
            isPrivateEmail: claims.email == nil ? nil : (claims.isPrivateEmail ?? false),
            detail: ["source": "sign-in", "clientId": claims.audience]
        )
        let (_, result) = try self.commit(accountID: record.accountID, commit, now: now)
        switch result {
        case .applied:
            return TransferSignInResult(accountID: record.accountID, migrated: true)
        case .replay:
            return TransferSignInResult(accountID: record.accountID, migrated: false)
        case .refused(let error, let state):
            if state.status.isTerminal { throw Self.ended(state.status == .deleted ? .deleted : .revoked) }
            if error.code == .conflict {
                throw TransferFailure(
                    .conflict,
                    "the account with this transfer identifier was already migrated to another Apple id"
                )
            }
            // Only a transfer that failed before its identifier was obtained gets here, and such a
            // record has no transfer_sub to be found by: treat as unknown.
            throw Self.unknownAppleID
        case .subConflict:
            throw TransferFailure(
                .conflict,
                "this Apple id is already linked to another account; nothing was merged"
            )
        case .idsHeld:
            throw TransferFailure(
                .conflict,
                "this Apple user's ids are held by another account's transfer record; nothing was merged"
            )
        }
    }

    static let unknownAppleID = TransferFailure(
        .notFound,
        "no account is linked to this Apple id or waiting for it as a transfer identifier"
    )

    static func ended(_ status: AppleLinkStatus) -> TransferFailure {
        TransferFailure(
            .revoked,
            status == .deleted
                ? "the Apple Account linked to this account was deleted"
                : "Sign in with Apple was revoked for this account; it is no longer linked"
        )
    }

    /// What `getCredentialState(forUserID:)` answers for `userID` (docs/apple-protocol.md §3.5): `authorized` for the
    /// id an account is reached by, `transferred` for the sender team's id after the account was
    /// migrated, `revoked` for any id of a revoked or deleted account, `notFound` otherwise. An id an
    /// earlier transfer moved the account away from (its record retired by a later transfer) reads
    /// as `transferred` too, or `revoked` once the account is.
    public func credentialState(userID: String) throws(TransferFailure) -> AppleCredentialState {
        guard !userID.isEmpty else { return .notFound }
        let found: (link: AppleLinkRecord?, record: TransferRecord?, retired: RetiredTransferRecord?)
        do {
            found = try store.read { tx in
                if let link = try tx.appleLink(sub: userID) {
                    return (link, try tx.transferRecord(accountID: link.accountID), nil)
                }
                if let record = try tx.transferRecord(oldSub: userID) { return (nil, record, nil) }
                guard let retired = try tx.retiredTransferRecord(oldSub: userID) else { return (nil, nil, nil) }
                let accountID = retired.record.accountID
                return (try tx.appleLink(accountID: accountID), try tx.transferRecord(accountID: accountID), retired)
            }
        } catch {
            throw Self.storageFailure(error)
        }
        if let retired = found.retired {
            let now = try Self.credentialState(userID: found.link?.sub ?? "", link: found.link, transfer: found.record)
            return now == .revoked ? .revoked : try Self.restore(retired.record).credentialState(for: userID)
        }
        return try Self.credentialState(userID: userID, link: found.link, transfer: found.record)
    }

    /// What `getCredentialState` answers for `userID`, given the link that holds it (if any) and the
    /// transfer of that account or of that former `sub` (if any). Shared with the admin account view.
    static func credentialState(
        userID: String,
        link: AppleLinkRecord?,
        transfer: TransferRecord?
    ) throws(TransferFailure) -> AppleCredentialState {
        if let transfer {
            return try restore(transfer).credentialState(for: userID)
        }
        guard let link else { return .notFound }
        // Never touched by a transfer: the link's own status is the whole story.
        switch link.status {
        case .linked, .transferred: return .authorized
        case .revoked, .deleted: return .revoked
        }
    }
}
