extension TransferService {
    /// Ends an account's Apple link because Apple answered `invalid_grant` to the daily check of its
    /// refresh token: the same transition as a `consent-revoked` notification (the machine's
    /// `consentRevoked`: credential state `revoked`, the refresh token deleted, one audit row
    /// `transfer.consentRevoked` and one `apple.consentRevoked` webhook event, in one transaction),
    /// with `source: linkCheck` in the audit row. Idempotent: a link a notification or another
    /// check already ended is `unchanged`.
    public func revokeAfterLinkCheck(
        accountID: String,
        now: Int64
    ) throws(TransferFailure)
        -> TransferNotificationResult
    {
        let commit = Commit(
            event: .consentRevoked,
            detail: ["source": "linkCheck", "appleAnswer": "invalid_grant"]
        )
        let (_, result) = try self.commit(accountID: accountID, commit, now: now)
        switch result {
        case .applied(_, let state):
            return TransferNotificationResult(outcome: .changed, accountID: accountID, status: state.status)
        case .replay(let state), .refused(_, let state), .subConflict(let state), .idsHeld(let state, _):
            return TransferNotificationResult(outcome: .unchanged, accountID: accountID, status: state.status)
        }
    }
}
