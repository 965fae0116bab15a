/// Where a sealed value lives: one column of one table.
public enum SealedValueKind: String, Sendable, CaseIterable, Hashable, Comparable {
    /// `totp_enrollments.secret_ciphertext`, context `UpgradeService.totpContext(accountID:)`.
    case totpSecret = "totp-secret"
    /// `apple_links.refresh_token_ciphertext` (when set), context `UpgradeService.refreshTokenContext`.
    case appleRefreshToken = "apple-refresh-token"
    /// `apple_revocations.token_ciphertext` until the revocation is done (then emptied), context
    /// `UpgradeService.refreshTokenContext` of the deleted account.
    case appleRevocationToken = "apple-revocation-token"
    /// `hash_parameter_sets.sealed`, context `HashParameterSet.sealingContext(id:)`.
    case hashParameters = "hash-parameters"

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
