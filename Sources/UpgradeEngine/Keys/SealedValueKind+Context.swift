extension SealedValueKind {
    /// The sealing context of a value of this kind whose row names `owner` (`SealedValueRecord.owner`):
    /// the same contexts the services seal and open with.
    public func context(owner: String) -> String {
        switch self {
        case .totpSecret: UpgradeService.totpContext(accountID: owner)
        case .appleRefreshToken, .appleRevocationToken: UpgradeService.refreshTokenContext(accountID: owner)
        case .hashParameters: HashParameterSet.sealingContext(id: Int64(owner) ?? 0)
        }
    }
}
