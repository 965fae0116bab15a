extension UpgradeService {
    /// Seals and stores a new Apple refresh token on an account's link (after a sign-in exchanged a
    /// fresh authorization code, e.g. with the recipient team after a transfer), with an audit row.
    public func storeRefreshToken(_ refreshToken: String, accountID: String, now: Int64) throws(ServiceFailure) {
        let sealed = secrets.seal(Array(refreshToken.utf8), context: Self.refreshTokenContext(accountID: accountID))
        do {
            try store.write { tx in
                guard var link = try tx.appleLink(accountID: accountID) else {
                    throw ServiceFailure(.notFound, "the account has no Apple link")
                }
                let version = link.version
                link.refreshTokenCiphertext = sealed
                link.updatedAt = now
                try tx.updateAppleLink(link, expectedVersion: version)
                try tx.appendAudit(
                    AuditEvent(
                        at: now,
                        accountID: accountID,
                        upgradeID: nil,
                        event: "apple.refreshTokenStored",
                        detail: ["clientId": link.clientID]
                    )
                )
            }
        } catch {
            throw Self.storageFailure(error)
        }
    }
}
