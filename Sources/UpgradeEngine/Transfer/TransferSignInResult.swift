/// The account a Sign in with Apple identity token belongs to (`POST /v1/apple/sign-in`).
public struct TransferSignInResult: Sendable, Equatable {
    public var accountID: String
    /// This sign-in re-keyed the account from the sender team's id to the token's `sub` (it carried
    /// the account's `transfer_sub`). A later sign-in, with or without `transfer_sub`, is `false`.
    public var migrated: Bool

    public init(accountID: String, migrated: Bool) {
        self.accountID = accountID
        self.migrated = migrated
    }
}
