/// The outcome of checking a TOTP code.
public enum TOTPVerification: Equatable, Sendable {
    /// The code is valid for `step`. The caller must store `step` as the account's last accepted step
    /// (in the same transaction that lets the user in), so that no code of this or an earlier step is
    /// accepted again.
    case accepted(step: Int64)
    /// The code is malformed or wrong.
    case rejected
    /// The code is right, but for a step at or before the last accepted one: it was already used, or an
    /// older code is being presented after a newer one. Refused like `.rejected`; kept apart so the
    /// caller can audit a possible replay.
    case replayed
}
