/// What the device forwards from Apple's credential besides the token (`email`, `fullName`), which
/// Apple gives only on the first authorization. Stored as the account's contact email and display
/// name only where the account has none, marked `ProfileSource.device`; the identity token's claims
/// stay what identifies the account (docs/architecture.md §7.4).
public struct DeviceGivenProfile: Sendable, Equatable {
    public var email: String?
    public var fullName: PersonName?

    public static let maxEmailBytes = ImportRowValidator.maxEmailBytes

    /// Nothing given: what a later authorization forwards.
    public init() {}

    /// Checks `email` (an empty one counts as absent, as Apple may send for managed accounts): at
    /// most 320 bytes, no spaces or control characters, `local@domain` with exactly one `@`, as an
    /// import's. `fullName` is checked by `PersonName.validated()`.
    public init(email: String?, fullName: PersonName?) throws(ProfileValidationError) {
        if let email, !email.isEmpty {
            let bytes = Array(email.utf8)
            guard bytes.count <= Self.maxEmailBytes else {
                throw ProfileValidationError(field: "email", "must be at most \(Self.maxEmailBytes) bytes")
            }
            guard bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7f }), !email.unicodeScalars.contains(where: Self.isHidden)
            else {
                throw ProfileValidationError(field: "email", "contains a space or a control character")
            }
            let at = bytes.firstIndex(of: UInt8(ascii: "@"))
            guard let at, at > 0, at < bytes.count - 1, bytes.lastIndex(of: UInt8(ascii: "@")) == at else {
                throw ProfileValidationError(field: "email", "must have the form local@domain with exactly one '@'")
            }
            self.email = email
        }
        self.fullName = try fullName?.validated()
    }

    public var isEmpty: Bool { email == nil && fullName == nil }

    /// Non-ASCII spaces, controls and format characters: invisible in an address.
    private static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// What `filling` stored: the profile as it now stands, and the names of the fields it filled
    /// (`email`, `displayName`, `fullName`, `realUserStatus`), for the audit row.
    public struct Filled: Sendable, Equatable {
        public var profile: AccountProfileRecord
        public var fields: [String]
    }

    /// `profile` (nil when the account has none) with what is missing filled in: the contact email
    /// and the display name (formed from `fullName`) where it has none, marked as the device's; the
    /// name's parts and `realUserStatus` (from the verified token) where it has none. Nothing it has is
    /// replaced. Nil when nothing changes. Pure: the caller reads and writes in one transaction.
    public func filling(
        _ profile: AccountProfileRecord?,
        accountID: String,
        realUserStatus: AppleRealUserStatus?,
        now: Int64
    ) -> Filled? {
        var next =
            profile
            ?? AccountProfileRecord(
                accountID: accountID,
                email: nil,
                displayName: nil,
                importRun: nil,
                importLine: nil,
                updatedAt: now
            )
        var fields: [String] = []
        if next.email == nil, let email {
            (next.email, next.emailSource) = (email, .device)
            fields.append("email")
        }
        if next.displayName == nil, let display = fullName?.displayName {
            (next.displayName, next.displayNameSource) = (display, .device)
            fields.append("displayName")
        }
        if next.fullName == nil, let fullName {
            next.fullName = fullName
            fields.append("fullName")
        }
        if next.realUserStatus == nil, let realUserStatus {
            next.realUserStatus = realUserStatus
            fields.append("realUserStatus")
        }
        guard !fields.isEmpty else { return nil }
        next.updatedAt = now
        return Filled(profile: next, fields: fields)
    }

    /// Inside a write transaction: fills the profile of `accountID` (see `filling`) and returns it as
    /// it now stands (nil when the account has none and nothing was given), with the fields filled.
    @discardableResult
    public func store(
        accountID: String,
        realUserStatus: AppleRealUserStatus?,
        in tx: any StoreTransaction,
        now: Int64
    ) throws(StorageError) -> (profile: AccountProfileRecord?, filled: [String]) {
        try store(
            over: try tx.accountProfile(accountID: accountID),
            accountID: accountID,
            realUserStatus: realUserStatus,
            in: tx,
            now: now
        )
    }

    /// `store`, over the profile the same transaction has already read.
    @discardableResult
    func store(
        over profile: AccountProfileRecord?,
        accountID: String,
        realUserStatus: AppleRealUserStatus?,
        in tx: any StoreTransaction,
        now: Int64
    ) throws(StorageError) -> (profile: AccountProfileRecord?, filled: [String]) {
        guard let filled = filling(profile, accountID: accountID, realUserStatus: realUserStatus, now: now) else {
            return (profile, [])
        }
        try tx.upsertAccountProfile(filled.profile)
        return (filled.profile, filled.fields)
    }
}
