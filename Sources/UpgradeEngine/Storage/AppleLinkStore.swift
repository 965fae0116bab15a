/// Apple links inside a transaction: the Apple `sub` each converted account signs in with.
public protocol AppleLinkStore {
    func insertAppleLink(_ link: AppleLinkRecord) throws(StorageError)
    func appleLink(accountID: String) throws(StorageError) -> AppleLinkRecord?
    func appleLink(sub: String) throws(StorageError) -> AppleLinkRecord?
    /// Stores every field of the link (the account id names it). A `sub` another link has fails
    /// with `.uniqueViolation` on `.appleLinksSub`.
    func updateAppleLink(_ link: AppleLinkRecord, expectedVersion: Int64) throws(StorageError)
}
