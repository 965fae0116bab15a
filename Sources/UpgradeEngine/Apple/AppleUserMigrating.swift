/// The calls a team transfer makes to Apple (docs/apple-protocol.md §3): a team access token, then
/// `/auth/usermigrationinfo` from the sender team (`sub` → `transfer_sub`) or from the recipient
/// team (`transfer_sub` → new `sub`). The real HTTPS client and the in-process emulator both
/// conform, so the transfer service runs unchanged against either.
///
/// Every method answers Apple's HTTP 400 codes as ``AppleEndpointError`` with that code, and
/// 429, 5xx and transport failures as ``AppleEndpointError/Code/unavailable`` (which callers retry).
public protocol AppleUserMigrating: Sendable {
    /// `grant_type=client_credentials`, `scope=user.migration`: a team access token (`expires_in`
    /// 3600) for `/auth/usermigrationinfo`, signed with this team's client secret for `clientID`.
    func teamAccessToken(clientID: String) async throws(AppleEndpointError) -> AppleTokenResponse

    /// Sender team: the user's `transfer_sub` for the recipient team `target` (docs/apple-protocol.md §3.3).
    func transferSub(
        forSub sub: String,
        target: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> String

    /// Recipient team: the user's new team-scoped `sub`, and a new relay address for users who hid
    /// their email (docs/apple-protocol.md §3.4).
    func migrate(
        transferSub: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> AppleMigratedUser
}
