/// Creates and updates accounts over the admin API (scope `provisioning`): `PUT
/// /v1/admin/accounts/{username}` for one account, `POST /v1/admin/accounts/batch` for up to
/// `maxBatchRows`. A row has the fields of an `accounts import` row and is checked and written by
/// the importer's own validator and writer (`AccountImporter.write`) with `--on-conflict update`:
/// the same rules, limits and audit detail, and a credential change ends the flows the earlier
/// credentials opened in the same transaction. An existing account that already holds every value
/// a row gives is `skipped`: nothing written, nothing audited (docs/architecture.md §7.5).
public struct AccountProvisioningService: Sendable {
    public static let maxBatchRows = 1000

    /// What one batch row came to: its `index` in the batch, its username (enforced form when
    /// valid, as given otherwise, nil when absent), what was done and why it was refused or skipped.
    public struct RowResult: Sendable, Equatable {
        public let index: Int
        public let username: String?
        public let action: ImportAction
        public let reason: String?
    }

    let store: any UpgradeStore
    let passwords: PasswordVerifier
    /// Seals TOTP secrets; rows with `totp` are refused without it.
    let secrets: SecretBox?
    /// Recorded on Apple links; rows with `appleSub` are refused unless both are known.
    let appleTeamID: String?
    let appleClientID: String?

    public init(
        store: any UpgradeStore,
        passwords: PasswordVerifier = PasswordVerifier(),
        secrets: SecretBox?,
        appleTeamID: String?,
        appleClientID: String?
    ) {
        self.store = store
        self.passwords = passwords
        self.secrets = secrets
        self.appleTeamID = appleTeamID
        self.appleClientID = appleClientID
    }

    /// The server's: the upgrade service's store, hash limits, secret key and team, and the Apple
    /// client id links record (nil refuses rows with `appleSub`).
    public init(upgrades: UpgradeService, appleClientID: String?) {
        self.init(
            store: upgrades.store,
            passwords: upgrades.passwords,
            secrets: upgrades.secrets,
            appleTeamID: upgrades.configuration.appleTeamID,
            appleClientID: appleClientID
        )
    }

    /// Creates or updates the account `username` from `fields` (an import row's, without
    /// `username`). Returns `created`, `updated` or `skipped` (already so); a refused row is a
    /// `validation` failure whose message starts with the field.
    public func put(
        username: String,
        fields: JSONValue,
        by tokenName: String,
        now: Int64
    ) throws(ServiceFailure) -> ImportAction {
        let row: Result<ImportRawRow, ImportRowError>
        if fields.members?.contains(where: { $0.key == ImportField.username.rawValue }) == true {
            row = .failure(ImportRowError(field: "username", "is the path's; leave it out of the body"))
        } else {
            row = ImportReader.parseJSONRow(
                fields,
                what: "the body",
                accepted: ImportField.allCases.filter { $0 != .username }
            ).map { raw in
                var named = raw
                named.values[.username] = username
                return named
            }
        }
        let report = try write([ImportSourceRow(line: 1, row: row)], by: tokenName, now: now)[0]
        guard report.action != .error else {
            throw ServiceFailure(.validation, report.reason ?? "the row was refused")
        }
        return report.action
    }

    /// Decides every row, then writes the valid ones, in one transaction: one result per row, in
    /// order. More than `maxBatchRows` rows is a `validation` failure and changes nothing.
    public func batch(_ rows: [JSONValue], by tokenName: String, now: Int64) throws(ServiceFailure) -> [RowResult] {
        guard rows.count <= Self.maxBatchRows else {
            throw ServiceFailure(
                .validation,
                "accounts: \(rows.count) rows; a batch holds at most \(Self.maxBatchRows)"
            )
        }
        guard !rows.isEmpty else { return [] }
        let sources = rows.enumerated().map { index, json in
            ImportSourceRow(line: Int64(index) + 1, row: ImportReader.parseJSONRow(json, what: "a row"))
        }
        return try write(sources, by: tokenName, now: now).map { report in
            RowResult(
                index: Int(report.line) - 1,
                username: report.username,
                action: report.action,
                reason: report.reason
            )
        }
    }

    private func write(
        _ rows: [ImportSourceRow],
        by tokenName: String,
        now: Int64
    ) throws(ServiceFailure)
        -> [ImportRowReport]
    {
        var options = AccountImportOptions(runID: "", source: "admin API")
        options.onConflict = .update
        options.secrets = secrets
        options.appleTeamID = appleTeamID
        options.appleClientID = appleClientID
        options.origin = .api(by: tokenName)
        let importer = AccountImporter(store: store, options: options, passwords: passwords)
        do {
            return try importer.write(rows, now: now)
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }
}
