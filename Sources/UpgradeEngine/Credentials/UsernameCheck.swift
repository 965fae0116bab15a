/// Stored usernames measured against the username profile (`Username`): accounts created before it
/// may hold a form it would store differently, one it refuses (mixed scripts included), one that
/// collides with another account's once enforced, or one that looks like another account's (the
/// same confusable skeleton, UTS #39). `db check` reports them; `db migrate` (migration 7) re-keys
/// the accounts that change and collide with nothing, and never merges or renames the others.
public struct UsernameCheck: Sendable, Equatable {
    /// An account whose stored username the profile maps to `username` and that collides with no
    /// other account: re-keying it changes who can sign in as what for nobody.
    public struct Change: Sendable, Equatable {
        public var account: AccountRecord
        public var username: String
    }

    /// Accounts whose usernames are one name under the profile: only an operator can tell which
    /// (if any) is the look-alike.
    public struct Collision: Sendable, Equatable {
        public var username: String
        public var accounts: [AccountRecord]
    }

    /// An account whose stored username the profile refuses: it can no longer sign in with a password.
    public struct Refusal: Sendable, Equatable {
        public var account: AccountRecord
        public var reason: String
    }

    /// Accounts whose stored usernames have one confusable skeleton (UTS #39): they look alike,
    /// and only an operator can tell which (if any) is the impostor.
    public struct LookAlike: Sendable, Equatable {
        public var skeleton: String
        public var accounts: [AccountRecord]
    }

    /// The schema migration whose application re-keys usernames (`Schema/sqlite/0007_precis_usernames.sql`).
    static let migrationVersion = 7

    /// How many accounts were read.
    public var accounts = 0
    public var changes: [Change] = []
    public var collisions: [Collision] = []
    public var refusals: [Refusal] = []
    public var lookAlikes: [LookAlike] = []
    /// Whether look-alikes were compared: only with skeletons this binary's ICU computed (after
    /// migration 18, `UsernameSkeletons`).
    public var lookAlikesChecked = false

    public var isClean: Bool {
        changes.isEmpty && collisions.isEmpty && refusals.isEmpty && lookAlikes.isEmpty && lookAlikesChecked
    }

    /// Reads every account, a page at a time. Accounts already in the enforced form cannot collide
    /// with each other (the column is UNIQUE), so only the changed ones are grouped. Look-alikes come
    /// from the stored skeletons, grouped by the database; `lookAlikes` is false for a database
    /// without them (before migration 18).
    public static func run(
        _ tx: any StoreTransaction,
        pageSize: Int = 1000,
        lookAlikes: Bool = true
    ) throws(StorageError) -> UsernameCheck {
        var check = UsernameCheck()
        if lookAlikes, try UsernameSkeletons.areCurrent(tx) {
            check.lookAlikesChecked = true
            for (skeleton, account) in try tx.accountsSharingUsernameSkeleton() {
                if check.lookAlikes.last?.skeleton == skeleton {
                    check.lookAlikes[check.lookAlikes.count - 1].accounts.append(account)
                } else {
                    check.lookAlikes.append(LookAlike(skeleton: skeleton, accounts: [account]))
                }
            }
        }
        var changed: [String: [AccountRecord]] = [:]
        var order: [String] = []
        var after: String?
        while true {
            let page = try tx.accounts(afterID: after, limit: pageSize)
            check.accounts += page.count
            for account in page {
                do {
                    let username = try Username(account.username)
                    guard !username.isStored(as: account.username) else { continue }
                    // The keys are NFC, so Swift's canonical-equivalence `==` on them is exact.
                    if changed[username.value] == nil { order.append(username.value) }
                    changed[username.value, default: []].append(account)
                } catch {
                    check.refusals.append(Refusal(account: account, reason: error.message))
                }
            }
            guard page.count == pageSize, let last = page.last else { break }
            after = last.id
        }
        for key in order {
            let accounts = changed[key] ?? []
            let username = try Username.stored(key)
            let holder = try tx.account(username: username)
            if let holder {
                check.collisions.append(Collision(username: key, accounts: [holder] + accounts))
            } else if accounts.count > 1 {
                check.collisions.append(Collision(username: key, accounts: accounts))
            } else if let account = accounts.first {
                check.changes.append(Change(account: account, username: key))
            }
        }
        // A group the profile already makes one name is reported once, as that collision.
        let collided = check.collisions.map { Set($0.accounts.map(\.id)) }
        check.lookAlikes.removeAll { group in
            let ids = Set(group.accounts.map(\.id))
            return collided.contains { ids.isSubset(of: $0) }
        }
        return check
    }

    /// Applies `changes` in the caller's transaction, each with an `account.username-rekeyed` audit row
    /// naming the earlier form. Returns what is left: the collisions and refusals.
    public static func rekey(_ tx: any StoreTransaction, now: Int64) throws(StorageError) -> UsernameCheck {
        // Migration 7 runs before migration 18 adds skeletons.
        var check = try run(tx, lookAlikes: false)
        for change in check.changes {
            try tx.updateAccountUsername(
                id: change.account.id,
                username: try Username.stored(change.username),
                expectedVersion: change.account.version,
                now: now
            )
            try tx.appendAudit(
                AuditEvent(
                    at: now,
                    accountID: change.account.id,
                    upgradeID: nil,
                    event: "account.username-rekeyed",
                    detail: ["previous": Self.escaped(change.account.username), "rule": "UsernameCaseMapped"]
                )
            )
        }
        check.changes = []
        return check
    }

    /// A stored username spelled so that look-alikes differ on screen: visible ASCII as it is, any
    /// other code point as `<U+XXXX>`.
    public static func escaped(_ username: String) -> String {
        var out = ""
        for scalar in username.unicodeScalars {
            if (0x21...0x7E).contains(scalar.value) && scalar != "<" {
                out.unicodeScalars.append(scalar)
            } else {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "<U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + ">"
            }
        }
        return out
    }
}

extension Username {
    /// A value known to be enforced already (the output of `init`), re-wrapped without a second trip
    /// through the rules failing: they are idempotent, so this cannot throw for such a value.
    static func stored(_ value: String) throws(StorageError) -> Username {
        do {
            return try Username(value)
        } catch {
            throw StorageError(.constraint, "an enforced username did not enforce again (\(error.code))")
        }
    }
}
