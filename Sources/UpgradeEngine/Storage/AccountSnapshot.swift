/// The rows `AccountStore.accountSnapshot` reads together.
public struct AccountSnapshot: Sendable, Equatable {
    public var account: AccountRecord
    public var credential: PasswordCredentialRecord?
    public var profile: AccountProfileRecord?

    public init(
        account: AccountRecord,
        credential: PasswordCredentialRecord? = nil,
        profile: AccountProfileRecord? = nil
    ) {
        self.account = account
        self.credential = credential
        self.profile = profile
    }
}
