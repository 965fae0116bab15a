/// Stored password hashes the verifier can no longer check: written before the limits were lowered
/// (or by hand), or in a shape the parser refuses. Such an account cannot sign in with its
/// password: each attempt is answered like a wrong password, after the same floor, and audited with
/// the reason (`hash` in the upgrade's audit detail). `db check` lists them; the fix is a new
/// password (an app-minted ticket and `POST /v1/password-changes`, or a re-import of a hash within
/// the limits).
public struct StoredHashCheck: Sendable, Equatable {
    public struct Unusable: Sendable, Equatable {
        public var account: AccountRecord
        /// The stored hash's scheme as far as it was recognised, and why it cannot be checked (no
        /// part of the hash but its prefix and cost parameters).
        public var reason: String
    }

    /// Password accounts whose stored hash was read.
    public var hashes = 0
    public var unusable: [Unusable] = []

    public var isClean: Bool { unusable.isEmpty }

    /// Reads every password account's hash, a page of accounts at a time, and checks it as a sign-in
    /// would before any hashing: nothing is computed.
    public static func run(
        _ tx: any StoreTransaction,
        verifier: PasswordVerifier = PasswordVerifier(),
        pageSize: Int = 1000
    ) throws(StorageError) -> StoredHashCheck {
        var check = StoredHashCheck()
        var after: String?
        while true {
            let page = try tx.accounts(afterID: after, limit: pageSize)
            for account in page where account.credentialKind == .password {
                // A legacy password has no hash yet: the legacy system checks it.
                guard let credential = try tx.passwordCredential(accountID: account.id), !credential.isLegacy else {
                    continue
                }
                check.hashes += 1
                do {
                    _ = try verifier.inspect(credential.hash)
                } catch {
                    check.unusable.append(Unusable(account: account, reason: error.message))
                }
            }
            guard page.count == pageSize, let last = page.last else { break }
            after = last.id
        }
        return check
    }
}
