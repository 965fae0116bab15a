/// Which of the extension's calls began an upgrade or a password change, sent as the first
/// request's `entry` so that the server's migration report can tell the two paths apart. A flow
/// authorised by a ticket counts as an in-app one whatever is sent.
public enum UpgradeEntry: String, Sendable, CaseIterable {
    /// `convertAccountToSignInWithAppleWithoutUserInteraction` or
    /// `changePasswordWithoutUserInteraction`.
    case silent
    /// `prepareInterfaceToConvertAccountToSignInWithApple` or `prepareInterfaceToChangePassword`.
    case withUI
}
