/// How an upgrade or password change was entered, as the migration report counts it
/// (docs/architecture.md §12). The raw value is stored (`entry` column, audit detail `entry`).
public enum FlowEntry: String, Sendable, Hashable, CaseIterable {
    /// The extension's call without user interface
    /// (`convertAccountToSignInWithAppleWithoutUserInteraction`, `changePasswordWithoutUserInteraction`).
    case silent
    /// The extension's call with a user interface (`prepareInterfaceToConvertAccountToSignInWithApple`,
    /// `prepareInterfaceToChangePassword`).
    case withUI
    /// An in-app flow: the request carried a ticket from `POST /v1/upgrade-tickets`, whichever call sent it.
    case ticket

    /// The entry of a flow whose request said `declared` and carried `ticket` or not: a ticket decides.
    public static func of(declared: FlowEntry?, ticket: String?) -> FlowEntry? {
        ticket == nil ? declared : .ticket
    }
}
