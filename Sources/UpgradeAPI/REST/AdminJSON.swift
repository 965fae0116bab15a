import UpgradeEngine

/// The JSON of the admin read routes (Schema/openapi.yaml `AuditEvent`, `AccountOverview`), also
/// what `upgrade-cli audit --json` prints, so the two never drift apart. Built from values that
/// hold no secret (`AuditEvent`, `AccountOverview`), so there is none to leave out here.
public enum AdminJSON {
    public static func event(_ event: AuditEvent) -> JSONValue {
        JSONValue.object([
            "id": event.id.map { .integer($0) },
            "at": .string(RFC3339.utc(seconds: event.at)),
            "accountId": event.accountID.map { .string($0) },
            "upgradeId": event.upgradeID.map { .string($0) },
            "event": .string(event.event),
            "from": event.fromStatus.map { .string($0) },
            "to": event.toStatus.map { .string($0) },
            "detail": .object(event.detail.sorted { $0.key < $1.key }.map { .init($0.key, .string($0.value)) }),
        ])
    }

    public static func page(_ page: AdminQueryService.AuditPage, cursors: AuditCursors) -> JSONValue {
        JSONValue.object([
            "events": .array(page.events.map(event)),
            "nextCursor": page.nextBeforeID.map { .string(cursors.cursor(afterID: $0)) },
        ])
    }

    public static func overview(_ overview: AccountOverview) -> JSONValue {
        let account = overview.account
        let apple = overview.apple
        return JSONValue.object([
            "id": .string(account.id),
            "username": .string(account.username),
            "credentialKind": .string(account.credentialKind.rawValue),
            "createdAt": .string(RFC3339.utc(seconds: account.createdAt)),
            "email": overview.email.map { .string($0) },
            "emailSource": overview.emailSource.map { .string($0.rawValue) },
            "displayName": overview.displayName.map { .string($0) },
            "displayNameSource": overview.displayNameSource.map { .string($0.rawValue) },
            "fullName": overview.fullName?.json,
            "realUserStatus": overview.realUserStatus.map { .string($0.name) },
            "password": .bool(overview.password != nil),
            "legacyPassword": .bool(overview.password?.format == PasswordCredentialRecord.legacyFormat),
            "totp": .bool(overview.totp != nil),
            "recoveryCodesLeft": .integer(Int64(overview.recoveryCodesLeft)),
            "apple": JSONValue.object([
                "linked": .bool(apple?.status == .linked),
                "status": apple.map { .string($0.status.rawValue) },
                "sub": apple.map { .string($0.sub) },
                "linkedAt": apple.map { .string(RFC3339.utc(seconds: $0.linkedAt)) },
                "credentialState": apple?.credentialState.map { .string($0.name) },
            ]),
            "transfer": overview.transfer.map(transfer),
            "earlierTransfers": .array(overview.earlierTransfers.map(transfer)),
            "openUpgrades": .array(
                overview.openUpgrades.map {
                    JSONValue.object([
                        "id": .string($0.id), "status": .string($0.status),
                        "expiresAt": .string(RFC3339.utc(seconds: $0.expiresAt)),
                    ])
                }
            ),
            "lastEvents": .array(overview.lastEvents.map(event)),
        ])
    }

    static func transfer(_ transfer: AccountOverview.Transfer) -> JSONValue {
        JSONValue.object([
            "status": .string(transfer.status),
            "targetTeamId": .string(transfer.targetTeamID),
            "failureReason": transfer.failureReason.map { .string($0) },
            "retiredAt": transfer.retiredAt.map { .string(RFC3339.utc(seconds: $0)) },
        ])
    }
}
