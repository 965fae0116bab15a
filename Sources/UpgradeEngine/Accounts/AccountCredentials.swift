/// An account's credentials as the rows that hold them (the password hash, the TOTP enrollment with
/// its secret sealed to the account, the recovery codes' hashes) and what an audit row says of
/// them. Every way an account gets credentials builds them here (`AccountCreationService` for
/// `accounts add` and the development demo account, `AccountImporter` for created and updated rows),
/// so all of them write the same rows and the same audit detail.
public struct AccountCredentials: Sendable {
    public var password: PasswordCredentialRecord?
    public var totp: TOTPEnrollmentRecord?
    public var recoveryCodeHashes: [String]

    /// TOTP is enrolled only when there are both a secret and `secrets` to seal it with.
    public init(
        accountID: String,
        passwordHash: (hash: String, format: String)?,
        totp: OTPAuthURI?,
        secrets: SecretBox?,
        recoveryCodeHashes: [String],
        now: Int64
    ) {
        password = passwordHash.map {
            PasswordCredentialRecord(accountID: accountID, hash: $0.hash, format: $0.format, updatedAt: now)
        }
        if let totp, let secrets {
            self.totp = TOTPEnrollmentRecord(
                accountID: accountID,
                secretCiphertext: secrets.seal(totp.secret, context: UpgradeService.totpContext(accountID: accountID)),
                algorithm: totp.parameters.algorithm,
                digits: totp.parameters.digits,
                period: totp.parameters.period,
                lastAcceptedStep: nil,
                createdAt: now
            )
        }
        self.recoveryCodeHashes = recoveryCodeHashes
    }

    public var isEmpty: Bool { password == nil && totp == nil && recoveryCodeHashes.isEmpty }

    /// `passwordFormat`, `secondFactor` and `recoveryCodes`, for what is there.
    public var auditDetail: [String: String] {
        var detail: [String: String] = [:]
        if let password { detail["passwordFormat"] = password.format }
        if totp != nil { detail["secondFactor"] = "totp" }
        if !recoveryCodeHashes.isEmpty { detail["recoveryCodes"] = String(recoveryCodeHashes.count) }
        return detail
    }
}
